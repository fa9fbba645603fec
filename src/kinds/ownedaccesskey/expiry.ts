/**
 * When an access key stops working. A key with `ttl` > 0 expires `ttl` seconds after its creation, or, with
 * `ttlAfterLastActivity`, after its last activity: the later of `status.lastActivity` and a use noted but not yet
 * written (auth/activity.ts). A key without a ttl never expires.
 *
 * `status.expirationTimestamp` is this, written by the server on every write of the key (create, update, the status
 * writes that record its use), from what is stored: for a key counting from its last activity it can lag behind a
 * use by up to --access-key-activity-interval, so a key never stops working before the time it shows.
 */
import { nowRFC3339 } from '../../apimachinery/time.js';
import { isPlainObject } from '../../apimachinery/types.js';
import type { ReadView } from '../../registry/readview.js';
import type { OwnedAccessKey } from './types.js';

/** How far ahead of this server's clock another replica's may be when it records a use of a key. */
const CLOCK_SKEW_MS = 60_000;

export function isFuture(ms: number, now: number): boolean {
  return ms > now + CLOCK_SKEW_MS;
}

/**
 * `status.lastActivity` in ms since the epoch, or undefined when absent, unreadable or in the future: a use of a key
 * never lies in the future, so such a value was not recorded by the server and does not count.
 */
export function lastActivityOf(obj: OwnedAccessKey, now: number): number | undefined {
  const value = obj.status?.lastActivity;
  const ms = typeof value === 'string' ? Date.parse(value) : NaN;
  return Number.isNaN(ms) || isFuture(ms, now) ? undefined : ms;
}

/** A ttl in seconds, or 0 for none (what validation refuses counts as none here). */
export function ttlSeconds(obj: OwnedAccessKey): number {
  const ttl = obj.spec?.ttl;
  return typeof ttl === 'number' && Number.isFinite(ttl) && ttl > 0 ? ttl : 0;
}

/**
 * When `obj` expires (ms since the epoch), or undefined when it does not; `lastSeen` is a use noted and not yet
 * written, `now` the clock (a recorded activity in the future does not count).
 */
export function expiresAt(obj: OwnedAccessKey, now: number, lastSeen?: number): number | undefined {
  const ttl = ttlSeconds(obj);
  if (!ttl) return undefined;
  const created = Date.parse(obj.metadata.creationTimestamp ?? '');
  let from = Number.isNaN(created) ? 0 : created;
  if (obj.spec?.ttlAfterLastActivity === true) from = Math.max(from, lastActivityOf(obj, now) ?? 0, lastSeen ?? 0);
  return from + ttl * 1000;
}

/** status.expirationTimestamp of `obj` as stored now: set from expiresAt, or removed for a key without a ttl. */
export function setExpirationTimestamp(obj: OwnedAccessKey, now: number): void {
  const at = expiresAt(obj, now);
  if (at !== undefined) obj.status = { ...obj.status, expirationTimestamp: nowRFC3339(new Date(at)) };
  else if (obj.status?.expirationTimestamp !== undefined) {
    const { expirationTimestamp: _gone, ...rest } = obj.status;
    if (Object.keys(rest).length) obj.status = rest;
    else delete obj.status;
  }
}

/** Whether a key expiring at `at` is in the last tenth of its ttl at `now` (when its users are warned). */
export function nearExpiry(obj: OwnedAccessKey, at: number, now: number): boolean {
  return at - now <= (ttlSeconds(obj) * 1000) / 10;
}

/**
 * A key stored before status.expirationTimestamp existed reads with it (registry/readview.ts) until a write of the
 * key stores it: every key with a ttl shows when it expires.
 */
export const expiryReadView: ReadView<OwnedAccessKey> = {
  derivedFrom: (obj) => (ttlSeconds(obj) > 0 && obj.status?.expirationTimestamp === undefined ? 0 : undefined),
  derive(obj, now) {
    const read = { ...obj };
    setExpirationTimestamp(read, now);
    return read;
  },
  // Only the derived value goes back to what is stored; anything else a writer put there is theirs, to validate.
  underive(written, stored) {
    if (stored.status?.expirationTimestamp !== undefined || !isPlainObject(written.status)) return;
    const derived = expiryReadView.derive(stored, Date.now()).status?.expirationTimestamp;
    if (derived !== undefined && written.status.expirationTimestamp === derived)
      delete written.status.expirationTimestamp;
  },
};
