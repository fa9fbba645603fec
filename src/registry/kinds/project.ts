/**
 * Project: owner and access like the other kinds; allowed clusters are named by valid, distinct Cluster names (or
 * `*`, every Cluster, as upstream's GitOps manifests write it), and only system:masters may set or change them, on
 * create as on update (they are the administrator's bound on where the project's virtual clusters come from; an
 * owner, an access entry granting update or a creator may not widen it). None listed (absent or empty) allows no Cluster: a bound nobody set is not "anywhere".
 */
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import * as errors from '../../apimachinery/status.js';
import type { GroupKind, KubeObject } from '../../apimachinery/types.js';
import { isDNS1123Label, isDNS1123Subdomain } from '../../apimachinery/validation.js';
import type { Strategy, StoredObjects } from '../strategy.js';
import type { AdminField } from '../../access/validation.js';
import { ownedKindStrategy } from './owned.js';

const spec = Path.root('spec');
/** The namespace of a project's virtual clusters: `p-<project>`, which must be a DNS label. */
export const projectNamespace = (project: string) => `p-${project}`;
/** The project whose namespace `namespace` is by its name, if it is of the form p-<project>. */
export const namespaceProject = (namespace: string): string | undefined =>
  namespace.startsWith('p-') && namespace.length > 2 ? namespace.slice(2) : undefined;

/** The allowedClusters entry that allows every Cluster. */
export const ALL_CLUSTERS = '*';
/** The names of a project's allowed clusters (none when absent: no Cluster is allowed). */
export const allowedClusters = (project: KubeObject): string[] =>
  ((project.spec?.allowedClusters ?? []) as { name?: string }[]).map((c) => c.name ?? '');

const validateSpec = (obj: KubeObject): FieldError[] => {
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

/** The administrator's fields (see the top); unset and empty both allow no Cluster. */
const adminFields: AdminField[] = [{ path: 'spec.allowedClusters', value: (s) => s.allowedClusters ?? [] }];

/** The allowed clusters narrow where the project's virtual clusters may come from. */
export const projectStrategy: Strategy = ownedKindStrategy('projects', validateSpec, {
  adminFields,
  restrictingFields: [['spec', 'allowedClusters']],
});

/**
 * The Project whose namespace `namespace` is, for a `kind` that lives in project namespaces; 422 on
 * metadata.namespace when there is none.
 */
export async function projectOfNamespace(
  projects: StoredObjects,
  namespace: string,
  kind: GroupKind,
  name: string,
): Promise<KubeObject> {
  const projectName = namespaceProject(namespace);
  const project = projectName ? await getIfExists(projects, projectName) : undefined;
  if (project) return project;
  const why = projectName ? `no Project ${JSON.stringify(projectName)} exists` : 'not the namespace of a Project';
  throw errors.invalid(kind, name, [
    fieldError.invalid(
      Path.root('metadata').child('namespace'),
      namespace,
      `${why}: a ${kind.kind} is created in the namespace p-<project> of its Project`,
    ),
  ]);
}

/** An object, or undefined when there is none of that name. */
export async function getIfExists(
  store: StoredObjects,
  name: string,
  namespace?: string,
): Promise<KubeObject | undefined> {
  return store.get(namespace, name).catch((err) => {
    if (errors.isStatusError(err, 'NotFound')) return undefined;
    throw err;
  });
}
