/** The Clusters a Project allows its virtual clusters to come from (spec.allowedClusters). */
import type { KubeObject } from '../../apimachinery/types.js';

/** The allowedClusters entry that allows every Cluster. */
export const ALL_CLUSTERS = '*';
/** The names of a project's allowed clusters (none when absent: no Cluster is allowed). */
export const allowedClusters = (project: KubeObject): string[] =>
  ((project.spec?.allowedClusters ?? []) as { name?: string }[]).map((c) => c.name ?? '');
