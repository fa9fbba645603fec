/**
 * ProjectSecret: a project's secret data, in the project's namespace p-<project> (refused anywhere else, for
 * everyone), with the same key rules as SharedSecret. Its data is either written by hand or synced from a
 * SharedSecret named in `spec.sharedSecretRef`:
 *
 * - naming a SharedSecret is a read of it: a write by a client that sets or changes the reference is allowed only if
 *   the caller may `get` that SharedSecret (asked of the same authorizers as a GET of it: owner, access list, host
 *   RBAC), else 403 naming it; keys the reference lists that the SharedSecret does not have are a 422. A SharedSecret
 *   that does not exist (yet) may be named: the sync reports it (SourceNotFound) and fills the data once it exists;
 * - the synced data lives in `spec.data` itself, written there by the sync (controllers/projectsecretsync.ts) as a
 *   server write, so every reader, watch and apply sees it as if written by hand. No client writes it while the
 *   reference is set: one that changes it is a 422, and hand-written data together with a new reference is too. A
 *   client's update that sets or changes the reference and leaves `spec.data` as it was read drops it (it belongs to
 *   the old source), and the sync fills it from the new one;
 * - the copy rests on whoever named the SharedSecret: the server records the caller of every client write that sets
 *   or changes the reference in `status.referencedBy` (their name, uid, groups and extra, as a SubjectAccessReview
 *   carries them), which no client writes and every write keeps as stored, and the sync keeps the data only while
 *   that writer may still get the SharedSecret;
 * - a synced ProjectSecret must have an owner: the sync keeps the data only while the owner may get the source too.
 *   Outside system:masters a create names as owner only the creator or a team of the creator's (kinds/owned.ts).
 */
import { jsonEqual } from '../../apimachinery/equality.js';
import { isDateTime } from '../../apimachinery/schema.js';
import { isPlainObject } from '../../apimachinery/types.js';
import { isRecordedUser } from '../../registry/recordeduser.js';
import { absentOr, isString, keepServerStatus } from '../../registry/serverstatus.js';
import type { Strategy } from '../../registry/strategy.js';
import { ownedKindStrategy } from '../owned.js';
import { projectSecretAdmission } from './admission.js';
import { projectSecretColumns } from './columns.js';
import { remoteTargets } from './delivery.js';
import { sharedSecretRef } from './reference.js';
import { validateSpec } from './validation.js';
import type { ProjectSecret } from './types.js';

/**
 * ProjectSecret's prepareForStatusUpdate: status.referencedBy stays as stored, whoever writes the status
 * (system:masters and the server included): it says whose access the copy rests on, which only the writes of the
 * reference decide.
 */
const keepReferenceWriter = keepServerStatus([
  { name: 'referencedBy', wellTyped: isRecordedUser, serverWrites: 'never' },
  // Whose access the copies outside the host rest on: the writes of the targets decide (admission.ts).
  { name: 'targetedBy', wellTyped: isRecordedUser, serverWrites: 'never' },
  // The delivery's lines: a client writing Delivered would say a Secret is where it is not.
  { name: 'targets', wellTyped: (v) => Array.isArray(v) && v.every(targetLineTyped), serverWrites: 'always' },
]);

/** A line of status.targets as the CRD types it: target and phase strings, the rest of their types when set. */
function targetLineTyped(line: unknown): boolean {
  if (!isPlainObject(line) || typeof line.target !== 'string' || typeof line.phase !== 'string') return false;
  return (
    absentOr(line.reason, isString) && absentOr(line.message, isString) && absentOr(line.lastDeliveryTime, isDateTime)
  );
}

const owned = ownedKindStrategy('projectsecrets', validateSpec, { hostRbac: true });

export const projectSecretStrategy: Strategy<ProjectSecret> = {
  ...owned,
  printerColumns: projectSecretColumns,
  prepareForUpdate(obj, old, user) {
    owned.prepareForUpdate!(obj, old, user);
    // A new reference, or none any more: what was copied from the old source goes, every key of it the write leaves
    // as it was (kept as hand-written data, it would outlive its writer's access to the source); the sync refills
    // the data from a new one. Hand-written data as read, with a new reference, goes too (the new source's to fill).
    const ref = sharedSecretRef(obj);
    const before = sharedSecretRef(old);
    if (user && !jsonEqual(ref, before)) {
      if (before) dropCopied(obj, old);
      else if (ref && obj.spec && jsonEqual(obj.spec.data, old.spec?.data)) delete obj.spec.data;
    }
    // No reference, no one it rests on (admitUpdate records the writer of a new one, once it is allowed).
    if (!ref && obj.status?.referencedBy !== undefined) delete obj.status.referencedBy;
    // No target outside the host, nobody the copies rest on.
    if (!remoteTargets(obj).length && obj.status?.targetedBy !== undefined) delete obj.status.targetedBy;
  },
  prepareForStatusUpdate: keepReferenceWriter,
  admission: projectSecretAdmission,
};

/** Drops from `obj` every key of spec.data whose value is the one `old` had: what was copied (see prepareForUpdate). */
function dropCopied(obj: ProjectSecret, old: ProjectSecret): void {
  const copied = (old.spec?.data ?? {}) as Record<string, string>;
  const kept = Object.entries((obj.spec?.data ?? {}) as Record<string, string>).filter(([k, v]) => copied[k] !== v);
  if (kept.length) obj.spec!.data = Object.fromEntries(kept);
  else if (obj.spec) delete obj.spec.data;
}
