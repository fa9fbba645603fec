/**
 * Which physical cluster a Cluster is: the uid of that cluster's kube-system Namespace, recorded by the server in
 * status.clusterUID (with status.clusterUIDRecordedTime) at the first check that reached it and no other Cluster
 * held it (src/controllers/clusterhealth.ts). What a cluster answers is its own to say, so the record is what
 * counts: a Cluster whose cluster later answers another uid is refused, not given that other cluster's identity, and
 * a uid one Cluster recorded is never another's. Hence the record, once written, is kept as stored by every status
 * write (the server's own included; a main-resource write keeps the whole status already), and only the server
 * writes the first one.
 *
 * Nor is a uid another Cluster recorded ever taken by a Cluster that existed beside that one, also once that one
 * goes: who held it outlives the holder in the server's own storage (controllers/clusteruidholders.ts), so no status
 * write, which a tenant may make fail by growing the object, decides it.
 */
import { isPlainObject } from '../../apimachinery/types.js';
import { isDateTime } from '../../apimachinery/schema.js';
import { isString, type ServerStatusField } from '../../registry/serverstatus.js';
import type { Cluster } from './types.js';

/** A Cluster's record of its physical cluster. */
export interface ClusterIdentity {
  /** The uid of the cluster's kube-system Namespace. */
  uid: string;
  /** When the server recorded it (RFC 3339 with microseconds, as kube's MicroTime): the first record keeps it. */
  recordedTime: string;
}

/** The record in a Cluster's status; undefined before the server wrote one. */
export function recordedIdentity(cluster: Cluster): ClusterIdentity | undefined {
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

/** Now, as a record's time: kube's MicroTime form ("2025-05-01T10:00:00.123000Z"). */
export const recordTime = (now = new Date()): string => now.toISOString().replace(/Z$/, '000Z');

/**
 * The record's fields for Cluster's prepareForStatusUpdate (registry/serverstatus.ts): a stored record stays as it
 * is, whoever writes; without one, only the server (no user) may write it, and what anyone else writes there is
 * dropped.
 */
export const identityFields: readonly ServerStatusField[] = [
  { name: 'clusterUID', wellTyped: isString, serverWrites: 'once' },
  { name: 'clusterUIDRecordedTime', wellTyped: isDateTime, serverWrites: 'once' },
];
