/** What a Project's schema cannot say: a name fit for its namespace, valid and distinct allowed clusters. */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { isDNS1123Label, isDNS1123Subdomain } from '../../apimachinery/validation.js';
import { projectNamespace } from './namespace.js';
import { ALL_CLUSTERS } from './allowedclusters.js';
import type { Project } from './types.js';

const spec = Path.root('spec');

export const validateSpec = (obj: Project): FieldError[] => {
  const s = obj.spec ?? {};
  const errs: FieldError[] = [];
  // The project's namespace p-<name> must be a valid namespace name, so the name is held to that.
  for (const msg of isDNS1123Label(projectNamespace(obj.metadata.name ?? ''))) {
    errs.push(
      fieldError.invalid(
        Path.root('metadata').child('name'),
        obj.metadata.name,
        `the project's namespace p-<name> must be a valid namespace name: ${msg}`,
      ),
    );
  }
  const seen = new Set<string>();
  ((s.allowedClusters ?? []) as Array<{ name?: string }>).forEach((c, i) => {
    const at = spec.child('allowedClusters').index(i).child('name');
    if (!c.name) errs.push(fieldError.required(at, 'the name of a Cluster'));
    else if (seen.has(c.name)) errs.push(fieldError.duplicate(at, c.name));
    else if (c.name !== ALL_CLUSTERS)
      for (const msg of isDNS1123Subdomain(c.name))
        errs.push(fieldError.invalid(at, c.name, `${msg}, or '*' for every Cluster`));
    if (c.name) seen.add(c.name);
  });
  return errs;
};
