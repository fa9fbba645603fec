/**
 * --access-key-max-ttl: outside system:masters, a key that is created or changed gets a ttl of at most the maximum,
 * and one asked for without a ttl (absent or 0) gets the maximum; the answer says so in a `Warning`. Keys stored
 * before are left as they are until such a write. The server's own writes (no user) and system:masters' are not held
 * to it, as a master may issue a longer-lived key on purpose.
 *
 * With `ttlAfterLastActivity` the ttl counts from the last use, so the maximum bounds how long such a key may lie
 * unused, not how long it is used.
 */
import { humanDuration } from '../../apimachinery/duration.js';
import { isPlainObject } from '../../apimachinery/types.js';
import { isMaster, type UserInfo } from '../../apimachinery/user.js';
import type { Strategy } from '../../registry/strategy.js';
import type { OwnedAccessKey } from './types.js';

/** `strategy` with every key written outside system:masters held to `maxSeconds`. */
export function withMaxTtl(strategy: Strategy<OwnedAccessKey>, maxSeconds: number): Strategy<OwnedAccessKey> {
  // What each write was told, from its preparation to its warnings (the same object goes through both).
  const capped = new WeakMap<object, string>();
  const cap = (obj: OwnedAccessKey, user: UserInfo | undefined) => {
    if (!user || isMaster(user) || !isPlainObject(obj.spec)) return;
    const ttl = obj.spec.ttl;
    // A ttl of the wrong type, or negative, is validation's to refuse.
    if (ttl !== undefined && ttl !== null && (typeof ttl !== 'number' || ttl < 0)) return;
    if (ttl && ttl <= maxSeconds) return;
    obj.spec.ttl = maxSeconds;
    capped.set(obj, maxTtlWarning(ttl, maxSeconds));
  };
  const told = (obj: OwnedAccessKey) => {
    const warning = capped.get(obj);
    return warning ? [warning] : [];
  };
  return {
    ...strategy,
    prepareForCreate(obj, user) {
      cap(obj, user);
      strategy.prepareForCreate?.(obj, user);
    },
    warningsOnCreate: (obj) => [...(strategy.warningsOnCreate?.(obj) ?? []), ...told(obj)],
    prepareForUpdate(obj, old, user) {
      cap(obj, user);
      strategy.prepareForUpdate?.(obj, old, user);
    },
    warningsOnUpdate: (obj, old) => [...(strategy.warningsOnUpdate?.(obj, old) ?? []), ...told(obj)],
  };
}

function maxTtlWarning(asked: number | null | undefined, maxSeconds: number): string {
  const was = asked ? `${asked}` : 'none';
  return `spec.ttl: set to ${maxSeconds} (${humanDuration(maxSeconds * 1000)}), the longest life this server gives access keys outside system:masters (--access-key-max-ttl); ${was} was asked for`;
}
