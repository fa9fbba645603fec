/** The Clusters a Project allows its virtual clusters to come from (spec.allowedClusters). */
import type { Project } from './types.js';

/** The allowedClusters entry that allows every Cluster. */
export const ALL_CLUSTERS = '*';
/** The names of a project's allowed clusters (none when absent: no Cluster is allowed). */
export const allowedClusters = (project: Project): string[] =>
  (project.spec?.allowedClusters ?? []).map((c) => c.name ?? '');

/** Whether the project allows its virtual clusters to come from the Cluster `name` (listed, or every Cluster). */
export function allowsCluster(project: Project, name: string): boolean {
  const allowed = allowedClusters(project);
  return allowed.includes(ALL_CLUSTERS) || allowed.includes(name);
}
