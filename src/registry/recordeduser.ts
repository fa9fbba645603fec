/**
 * Someone the server acts for, as recorded in a status field only the server writes (serverstatus.ts): who set a
 * ProjectSecret's reference (status.referencedBy), who imported a virtual cluster (a VirtualClusterInstance's
 * status.importedBy). What the server does for them later is asked again as them, as authentication had given them
 * (name, uid, groups, extra: what a SubjectAccessReview carries), so that their losing access ends it. The server learns
 * a user's groups only from a request of theirs, so the record is refreshed whenever the recorded user acts on the
 * object again (isRecordedAs): leaving a team then counts from their next such request. A credential's own
 * restriction (an access key's scope) was checked when they wrote, and is not kept.
 */
import { isPlainObject } from '../apimachinery/types.js';
import type { UserInfo } from '../apimachinery/user.js';

/** kube's authentication UserInfo, as JSON. */
export interface RecordedUser {
  username: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

/** What is recorded of `user`. */
export function recordUser(user: UserInfo): RecordedUser {
  return {
    username: user.name,
    ...(user.uid ? { uid: user.uid } : {}),
    ...(user.groups.length ? { groups: [...user.groups] } : {}),
    ...(user.extra && Object.keys(user.extra).length ? { extra: structuredClone(user.extra) } : {}),
  };
}

/** Whether a value has the type of a recorded user (the CRDs' schema of such a field), a username or not. */
export function isRecordedUser(v: unknown): boolean {
  const strings = (a: unknown) => Array.isArray(a) && a.every((x) => typeof x === 'string');
  return (
    isPlainObject(v) &&
    (v.username === undefined || typeof v.username === 'string') &&
    (v.uid === undefined || typeof v.uid === 'string') &&
    (v.groups === undefined || strings(v.groups)) &&
    (v.extra === undefined || (isPlainObject(v.extra) && Object.values(v.extra).every(strings)))
  );
}

/** The recorded user a field holds; undefined when it holds none (or nothing well formed). */
export function recordedUser(value: unknown): RecordedUser | undefined {
  return isRecordedUser(value) && (value as RecordedUser).username ? (value as RecordedUser) : undefined;
}

/** The identity to ask about: the recorded user as authentication had given them. */
export function asUserInfo(recorded: RecordedUser): UserInfo {
  return {
    name: recorded.username,
    ...(recorded.uid ? { uid: recorded.uid } : {}),
    groups: [...(recorded.groups ?? [])],
    ...(recorded.extra ? { extra: recorded.extra } : {}),
  };
}

/**
 * Whether `user` is the one recorded: the same name, and the same uid when both have one (a user deleted and made
 * again under the name has another uid).
 */
export function isRecordedAs(recorded: RecordedUser, user: UserInfo): boolean {
  return recorded.username === user.name && (!recorded.uid || !user.uid || recorded.uid === user.uid);
}
