/**
 * Which physical cluster a Cluster is: the uid of that cluster's kube-system Namespace, recorded by the server in
 * status.clusterUID (with status.clusterUIDRecordedTime) at the first check that reached it and no other Cluster
 * held it (src/controllers/clusterhealth.ts). What a cluster answers is its own to say, so the record is what
 * counts: a Cluster whose cluster later answers another uid is refused, not given that other cluster's identity, and
 * a uid one Cluster recorded is never another's. Hence the record, once written, is kept as stored by every status
 * write (the server's own included; a main-resource write keeps the whole status already), and only the server
 * writes the first one.
 *
 * Nor is a uid that another Cluster held when this one reached it ever this one's, once that Cluster goes: the
 * first answer of a copied uid looks like that of a cluster connected twice by mistake, and the copy would take the
 * cluster of whoever deletes their Cluster to re-create it. So the server adds each such uid to
 * status.refusedClusterUIDs, which only grows, whoever writes; only a new Cluster (whose create, with a config, is
 * system:masters') starts without it.
 */
import { isPlainObject, type KubeObject } from '../../apimachinery/types.js';
import { isRFC3339 } from '../../apimachinery/time.js';
import { isString, isStringList, keepServerStatus } from '../serverstatus.js';

/** A Cluster's record of its physical cluster. */
export interface ClusterIdentity {
  /** The uid of the cluster's kube-system Namespace. */
  uid: string;
  /** When the server recorded it (RFC 3339 with microseconds, as kube's MicroTime): the first record keeps it. */
  recordedTime: string;
}

/** The record in a Cluster's status; undefined before the server wrote one. */
export function recordedIdentity(cluster: KubeObject): ClusterIdentity | undefined {
  const status: unknown = cluster.status;
  if (!isPlainObject(status)) return undefined;
  const { clusterUID: uid, clusterUIDRecordedTime: recordedTime } = status;
  return typeof uid === 'string' && uid && typeof recordedTime === 'string' && recordedTime
    ? { uid, recordedTime }
    : undefined;
}

/** `status` with `identity` recorded in it. */
export function withIdentity(status: Record<string, unknown>, identity: ClusterIdentity): Record<string, unknown> {
  return { ...status, clusterUID: identity.uid, clusterUIDRecordedTime: identity.recordedTime };
}

/** The uids the Cluster was refused because another Cluster held them: it never records one of them. */
export const refusedUids = (cluster: KubeObject): string[] => refusedIn(cluster.status);

/** `status` with `uids` among its refused ones (the stored ones first, each once). */
export function withRefused(status: Record<string, unknown>, uids: Iterable<string>): Record<string, unknown> {
  const refused = new Set([...refusedIn(status), ...uids]);
  return refused.size ? { ...status, refusedClusterUIDs: [...refused] } : status;
}

function refusedIn(status: unknown): string[] {
  const refused = isPlainObject(status) ? status.refusedClusterUIDs : undefined;
  return Array.isArray(refused) ? refused.filter((uid): uid is string => typeof uid === 'string' && uid !== '') : [];
}

/** Now, as a record's time: kube's MicroTime form ("2025-05-01T10:00:00.123000Z"). */
export const recordTime = (now = new Date()): string => now.toISOString().replace(/Z$/, '000Z');

/**
 * Cluster's prepareForStatusUpdate: a stored record stays as it is, whoever writes; without one, only the server
 * (no user) may write it, and what anyone else writes there is dropped. The refused uids stay, whoever writes, and
 * only the server adds one.
 */
export const keepClusterIdentity = keepServerStatus([
  { name: 'clusterUID', wellTyped: isString, serverWrites: 'once' },
  { name: 'clusterUIDRecordedTime', wellTyped: isRFC3339, serverWrites: 'once' },
  { name: 'refusedClusterUIDs', wellTyped: isStringList, serverWrites: 'adds' },
]);
