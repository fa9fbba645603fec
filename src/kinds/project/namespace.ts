/** A project's namespace p-<project>, where its virtual clusters and ProjectSecrets live, and the Project of one. */
import { Path, fieldError } from '../../apimachinery/field.js';
import * as errors from '../../apimachinery/status.js';
import type { GroupKind } from '../../apimachinery/types.js';
import type { ReadStore } from '../../registry/strategy.js';
import type { Project } from './types.js';

/** The namespace of a project's virtual clusters: `p-<project>`, which must be a DNS label. */
export const projectNamespace = (project: string) => `p-${project}`;
/** The project whose namespace `namespace` is by its name, if it is of the form p-<project>. */
export const namespaceProject = (namespace: string): string | undefined =>
  namespace.startsWith('p-') && namespace.length > 2 ? namespace.slice(2) : undefined;

/**
 * The Project whose namespace `namespace` is, for a `kind` that lives in project namespaces; 422 on
 * metadata.namespace when there is none.
 */
export async function projectOfNamespace(
  projects: ReadStore<Project>,
  namespace: string,
  kind: GroupKind,
  name: string,
): Promise<Project> {
  const projectName = namespaceProject(namespace);
  const project = projectName ? await projects.find(undefined, projectName) : undefined;
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
