/**
 * Authentication with OwnedAccessKeys: `Authorization: Bearer <key>`.
 *
 * The keys are found in memory: an index from the stored hash of each key to its (stored) object, filled from the
 * API group's watch cache and kept current by following it, so a request costs one SHA-256 and a map lookup.
 * A token the index does not know may belong to a key created a moment ago whose event has not arrived yet: the
 * cache is then brought up to etcd's current revision (one small etcd request, shared by concurrent misses) and the
 * index asked again. Tokens shaped like JWTs (service-account and other host-cluster tokens) skip this: keys never
 * look like one.
 *
 * A known key
 * - that is disabled: 401 `access key "<name>" is disabled`.
 * - that expired: 401 `access key "<name>" has expired`. A key with `ttl` > 0 expires `ttl` seconds after its
 *   creation, or, with `ttlAfterLastActivity`, after its last activity: the later of `status.lastActivity` and the
 *   last use this server noted (not yet written). A key never used counts from its creation. A use that is refused
 *   is not recorded, so an expired key stays expired. A `status.lastActivity` in the future is no use of the key
 *   and does not count (only the server writes it; see lastActivityOf).
 * - otherwise authenticates as its identity, and the use is noted for `status.lastActivity`:
 *   - user key: user `spec.user`, groups `spec.groups` + `platform:user:<user>`;
 *   - team key: user `platform:team:<team>`, groups `spec.groups` + `platform:team:<team>`;
 *   - subject key: user `spec.subject`, groups `spec.groups`;
 *   - extra `platform.sh/access-key: [<key object name>]`; the union adds `system:authenticated`;
 *   - a `restriction` (src/access/scope.ts) when the key has a scope, rules or allowPlatformCli.
 * - that was rotated (POST ownedaccesskeys/<name>/rotate) and is asked with the value the rotation replaced
 *   (`status.previousKey`): as the key, with a Warning, until `status.previousKeyExpirationTimestamp`; then 401
 *   `access key "<name>" was rotated at <t>; its previous value stopped working at <end>; use the new value`.
 * - that is being deleted (a finalizer holds it): 401 `access key "<name>" is being deleted`.
 * - that was created with an access key (`status.issuedWith`: that value, and the ones its key was created with):
 *   as long as each of those values works, and 401 naming the first that does not once one stops (its key deleted,
 *   disabled, expired, or that value rotated past its grace). Revoking a leaked key so revokes what was made with it.
 * Each authenticated request carries (ACCESS_KEY_USE, beside the user) which value of which key it used, so that what
 * is issued to it (a direct cluster endpoint token) can be refused once that value stops working (valueRefused).
 * Two keys with the same key material (client-chosen keys can collide), as their current value or as the one their
 * last rotation replaced, resolve to the oldest one, so a later copy can never take over the identity of the first; copies created in the same second (creationTimestamp has whole
 * seconds) are 401. A create never says whether a key value is in use.
 * Keys and hashes are never logged.
 */
import { Backoff } from '../apimachinery/backoff.js';
import { humanDuration } from '../apimachinery/duration.js';
import { isDateTime } from '../apimachinery/schema.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import type { IncomingMessage } from 'node:http';
import type { KubeObject } from '../apimachinery/types.js';
import type { CacheEvent, WatchCache } from '../storage/cacher.js';
import {
  ACCESS_KEY_USE,
  TEAM_GROUP_PREFIX,
  type AccessKeyUse,
  type AccessKeyValue,
  type Restriction,
  type UserInfo,
} from '../apimachinery/user.js';
import { expiresAt, nearExpiry } from '../kinds/ownedaccesskey/expiry.js';
import { USER_GROUP_PREFIX, hashAccessKey, isKeyHash } from '../kinds/ownedaccesskey/strategy.js';
import type { OwnedAccessKey } from '../kinds/ownedaccesskey/types.js';
import type { ActivityRecorder } from './activity.js';
import { buildRestriction, type RestrictionOptions } from '../access/scope.js';
import {
  AuthenticationError,
  CREDENTIAL_WARNINGS,
  bearerToken,
  type Authenticated,
  type Authenticator,
} from './types.js';

/** The extra key naming the OwnedAccessKey a request authenticated with. */
export const ACCESS_KEY_EXTRA = 'platform.sh/access-key';

export interface AccessKeyAuthenticatorOptions {
  /** The watch cache of the management.platform.sh group (`registry.caches.get(group)`). */
  cache: WatchCache<KubeObject>;
  /** Key prefix of the ownedaccesskeys: `<etcdPrefix>/management.platform.sh/ownedaccesskeys/`. */
  prefix: string;
  /** Notes each use for `status.lastActivity`. */
  recorder?: ActivityRecorder;
  /** Passed to the restrictions (src/access/scope.ts). */
  isNamespaced?: RestrictionOptions['isNamespaced'];
  /** Bring the cache up to date before answering that a token is unknown (default true). */
  refreshOnMiss?: boolean;
  now?: () => number;
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

interface IndexedKey {
  name: string;
  hash: string;
  object: OwnedAccessKey;
  created: number;
  user: UserInfo;
  /** status.rotations: which value the current one is. */
  generation: number;
  /** The value the last rotation replaced, and when it stops (stopped) working. */
  previous?: { hash: string; until: number; rotatedAt: string };
  /** status.issuedWith: the values it was created with, the nearest first (none: it is refused, see put). */
  issuedWith: AccessKeyValue[] | undefined;
}

/** A key found by a value, and whether that value is the one its last rotation replaced. */
interface Match {
  key: IndexedKey;
  previous: boolean;
}

const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((g): g is string => typeof g === 'string' && g !== '') : [];
}

/** The identity a key acts as (without system:authenticated, which the union adds). */
export function identityOf(obj: KubeObject, restriction?: Restriction): UserInfo | undefined {
  const spec = obj.spec ?? {};
  const groups = strings(spec.groups);
  let name: string;
  if (typeof spec.user === 'string' && spec.user) {
    name = spec.user;
    groups.push(USER_GROUP_PREFIX + spec.user);
  } else if (typeof spec.team === 'string' && spec.team) {
    name = TEAM_GROUP_PREFIX + spec.team;
    groups.push(name);
  } else if (typeof spec.subject === 'string' && spec.subject) {
    name = spec.subject;
  } else {
    return undefined;
  }
  const user: UserInfo = {
    name,
    groups: [...new Set(groups)],
    extra: { [ACCESS_KEY_EXTRA]: [obj.metadata.name ?? ''] },
  };
  if (restriction) user.restriction = restriction;
  return user;
}

/** Said with every answer to a key in the last tenth of its life: when it stops working, and what to do. */
function expiryWarning(name: string, at: number, now: number): string {
  return `access key ${JSON.stringify(name)} expires at ${rfc3339(at)} (in ${humanDuration(at - now)}); requests with it are refused from then on`;
}

/** Said with every answer to a request made with the value a rotation replaced, while it still works. */
function previousValueWarning(name: string, until: number, now: number): string {
  return `access key ${JSON.stringify(name)} was rotated: this value stops working at ${rfc3339(until)} (in ${humanDuration(until - now)}); use the new value`;
}

function rotatedMessage(name: string, previous: NonNullable<IndexedKey['previous']>): string {
  return `access key ${JSON.stringify(name)} was rotated at ${previous.rotatedAt}; its previous value stopped working at ${rfc3339(previous.until)}; use the new value`;
}

const rfc3339 = (ms: number) => nowRFC3339(new Date(ms));

function wholeNumber(v: unknown): number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v > 0 ? v : 0;
}

export class AccessKeyAuthenticator implements Authenticator {
  private readonly byName = new Map<string, IndexedKey>();
  private readonly byHash = new Map<string, Set<string>>();
  /** The values rotations replaced: hash to the names of the keys that had it. */
  private readonly byPreviousHash = new Map<string, Set<string>>();
  private unwatch?: () => void;
  private started = false;
  private stopped = false;
  private retry?: NodeJS.Timeout;
  /** The waits before following the cache again after it could not be (it was listing again). */
  private readonly retries = new Backoff({ initialMs: 200, maxMs: 5000 });
  private refreshing?: Promise<void>;
  private readonly now: () => number;
  private readonly log: NonNullable<AccessKeyAuthenticatorOptions['log']>;

  constructor(private readonly opts: AccessKeyAuthenticatorOptions) {
    this.now = opts.now ?? Date.now;
    this.log = opts.log ?? (() => {});
  }

  /** Fills the index from the cache and follows it. Call after the cache started (`registry.start()`). */
  start(): void {
    if (this.started) return;
    this.started = true;
    this.stopped = false;
    this.subscribe();
  }

  stop(): void {
    this.stopped = true;
    this.unwatch?.();
    this.unwatch = undefined;
    if (this.retry) clearTimeout(this.retry);
    this.retry = undefined;
  }

  /** How many keys the index holds (for tests and metrics). */
  get size(): number {
    return this.byName.size;
  }

  async authenticate(req: IncomingMessage): Promise<UserInfo | undefined> {
    const token = bearerToken(req);
    if (token === undefined) return undefined;
    if (!this.started) this.start();
    const hash = hashAccessKey(token);
    let match = this.find(hash);
    if (!match && this.opts.refreshOnMiss !== false && !JWT.test(token)) {
      await this.refresh();
      match = this.find(hash);
    }
    if (!match) return undefined;

    const { key, previous } = match;
    const now = this.now();
    const refused = this.refusal(key, previous, now);
    if (refused) throw new AuthenticationError(refused);
    this.opts.recorder?.record(key.name, now);
    const at = expiresAt(key.object, now, this.opts.recorder?.lastSeen(key.name));
    const user: Authenticated = { ...key.user, groups: [...key.user.groups] };
    const warnings: string[] = [];
    if (previous) warnings.push(previousValueWarning(key.name, key.previous!.until, now));
    if (at !== undefined && nearExpiry(key.object, at, now)) warnings.push(expiryWarning(key.name, at, now));
    if (warnings.length) user[CREDENTIAL_WARNINGS] = warnings;
    const use: AccessKeyUse = {
      name: key.name,
      uid: key.object.metadata.uid ?? '',
      generation: previous ? key.generation - 1 : key.generation,
    };
    const until = this.valueUntil(key, use.generation, now);
    if (until !== undefined) use.until = until;
    if (key.issuedWith?.length) use.issuedWith = key.issuedWith.map((v) => ({ ...v }));
    user[ACCESS_KEY_USE] = use;
    return user;
  }

  /**
   * Why a value of a key no longer works, or undefined while it does: the key is disabled, expired, or (the value a
   * rotation replaced) past its grace; or a value it was created with no longer works.
   */
  private refusal(key: IndexedKey, previous: boolean, now: number): string | undefined {
    return this.ownRefusal(key, previous, now) ?? this.chainRefusal(key, now);
  }

  /** Why a key no longer works because a value it was created with (status.issuedWith) does not. */
  private chainRefusal(key: IndexedKey, now: number): string | undefined {
    const name = JSON.stringify(key.name);
    if (!key.issuedWith) return `access key ${name} has a status.issuedWith this server cannot read; it is refused`;
    for (const link of key.issuedWith) {
      const why = this.generationRefusal(link, now);
      if (why)
        return `access key ${name} works only while the access keys it was made with work (status.issuedWith): ${why}`;
    }
    return undefined;
  }

  /** refusal without the keys it was created with. */
  private ownRefusal(key: IndexedKey, previous: boolean, now: number): string | undefined {
    const name = JSON.stringify(key.name);
    // Deleted, though a finalizer keeps the object a while: its holder's own finalizer must not keep it working.
    if (key.object.metadata.deletionTimestamp) return `access key ${name} is being deleted`;
    if (key.object.spec?.disabled === true) return `access key ${name} is disabled`;
    const at = expiresAt(key.object, now, this.opts.recorder?.lastSeen(key.name));
    if (at !== undefined && now >= at) return `access key ${name} has expired`;
    if (previous && now >= key.previous!.until) return rotatedMessage(key.name, key.previous!);
    return undefined;
  }

  /**
   * Why one value of a key (of status.issuedWith) no longer works by itself, or undefined while it does: its key is
   * gone (or another of its name), or the value is refused as refusal refuses it, or it was rotated away.
   */
  private generationRefusal(value: AccessKeyValue, now: number): string | undefined {
    const key = this.byName.get(value.name);
    const name = JSON.stringify(value.name);
    if (!key || key.object.metadata.uid !== value.uid) return `access key ${name} no longer exists`;
    if (value.generation === key.generation) return this.ownRefusal(key, false, now);
    if (value.generation === key.generation - 1 && key.previous) return this.ownRefusal(key, true, now);
    if (value.generation < key.generation)
      return `access key ${name} was rotated ${key.generation - value.generation} times since; use the new value`;
    return `access key ${name} has no value of generation ${value.generation}`;
  }

  /** When a value of a key stops working, counting the values it was created with; undefined for never. */
  private valueUntil(key: IndexedKey, generation: number, now: number): number | undefined {
    const own = (k: IndexedKey, previous: boolean): number | undefined => {
      const at = expiresAt(k.object, now, this.opts.recorder?.lastSeen(k.name));
      return previous && k.previous ? Math.min(k.previous.until, at ?? Infinity) : at;
    };
    let until = own(key, generation !== key.generation);
    for (const link of key.issuedWith ?? []) {
      const k = this.byName.get(link.name);
      if (!k) continue; // refused already (refusal)
      const end = own(k, link.generation !== k.generation);
      if (end !== undefined) until = Math.min(until ?? Infinity, end);
    }
    return until;
  }

  /**
   * Why what was issued to a request made with `use` (ACCESS_KEY_USE) must be refused now, or undefined when the value
   * it was made with still works: the key was deleted (or replaced by another of its name: the uid differs), is
   * disabled, expired or being deleted, that value was rotated away (past the grace, or two rotations ago), or a
   * value the key was created with is refused for any of these. With
   * `issuedTo`, the identity what was issued carries (a token's subject and groups): refused too once the key acts
   * as someone else, no longer has one of those groups, or has a scope now (a key that may no longer ask for it), so
   * that narrowing a key narrows what it was given. A key this server has not seen yet is looked for in etcd first.
   */
  async valueRefused(
    use: AccessKeyUse,
    issuedTo?: { name: string; groups: readonly string[] },
  ): Promise<string | undefined> {
    if (!this.started) this.start();
    let key = this.byName.get(use.name);
    if (!key || key.object.metadata.uid !== use.uid) {
      await this.refresh();
      key = this.byName.get(use.name);
    }
    if (!key || key.object.metadata.uid !== use.uid) return `access key ${JSON.stringify(use.name)} no longer exists`;
    const now = this.now();
    const refused = this.generationRefusal(use, now) ?? this.chainRefusal(key, now);
    return refused ?? (issuedTo && changedSince(key, issuedTo));
  }

  /**
   * Whether the request's bearer token is a known access key (working or not). Authenticators after this one
   * that send tokens elsewhere (TokenReview) should leave such tokens alone, so a rejected key is never sent out.
   */
  recognises(req: IncomingMessage): boolean {
    const token = bearerToken(req);
    if (token === undefined) return false;
    const hash = hashAccessKey(token);
    return !!this.byHash.get(hash)?.size || !!this.byPreviousHash.get(hash)?.size;
  }

  /**
   * The key a value stands for: the oldest key whose current value it is or whose last rotation replaced it, so that
   * a key created later with the value (a copy of a leaked or rotated value) never takes over the first one's, not
   * even after the rotation. creationTimestamp has whole seconds, so keys created in the same second cannot be told
   * apart in age: such a tie is refused rather than decided by name, which a copy could pick.
   */
  private find(hash: string): Match | undefined {
    let best: Match | undefined;
    let tied = false;
    const consider = (names: Set<string> | undefined, previous: boolean) => {
      for (const name of names ?? []) {
        const key = this.byName.get(name);
        if (!key) continue;
        if (!best || key.created < best.key.created) {
          best = { key, previous };
          tied = false;
        } else if (key.created === best.key.created && key !== best.key) {
          tied = true;
        }
      }
    };
    consider(this.byHash.get(hash), false);
    consider(this.byPreviousHash.get(hash), true);
    if (best && tied)
      throw new AuthenticationError(
        'this access key belongs to several OwnedAccessKeys created in the same second; it is refused',
      );
    return best;
  }

  /** Brings the cache (and so the index) up to etcd's current revision; concurrent callers share one refresh. */
  private refresh(): Promise<void> {
    this.refreshing ??= this.opts.cache
      .ensureConsistent(2000)
      .then(() => undefined)
      .catch(() => undefined)
      .finally(() => {
        this.refreshing = undefined;
      });
    return this.refreshing;
  }

  private subscribe(): void {
    if (this.stopped) return;
    try {
      const { items, revision } = this.opts.cache.snapshot(this.opts.prefix);
      this.byName.clear();
      this.byHash.clear();
      this.byPreviousHash.clear();
      for (const cached of items) this.put(cached.decode() as OwnedAccessKey);
      let terminated = false;
      this.unwatch = this.opts.cache.watch(this.opts.prefix, revision, {
        deliver: (events) => {
          if (!terminated) this.apply(events);
        },
        terminate: () => {
          terminated = true;
          this.unwatch = undefined;
          this.schedule(100);
        },
      });
      this.retries.reset();
    } catch (err) {
      // The cache is listing again (after losing its etcd watch): try once it is back.
      this.log('access keys: could not follow the watch cache; trying again', {
        error: err instanceof Error ? err.message : String(err),
      });
      this.schedule(this.retries.next());
    }
  }

  private schedule(delay: number): void {
    if (this.stopped || this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.subscribe();
    }, delay);
    this.retry.unref();
  }

  private apply(events: CacheEvent<KubeObject>[]): void {
    for (const e of events) {
      if (e.type === 'DELETED') {
        const name = e.object.metadata.name ?? '';
        this.remove(name);
        this.opts.recorder?.forget(name);
      } else {
        this.put(e.object as OwnedAccessKey);
      }
    }
  }

  /** Indexes a key of the cache (what it holds under the ownedaccesskeys prefix is OwnedAccessKeys). */
  private put(obj: OwnedAccessKey): void {
    const name = obj.metadata.name;
    if (!name) return;
    this.remove(name);
    const hash = obj.spec?.key;
    if (!isKeyHash(hash)) return;
    const restriction = buildRestriction(obj.spec, { isNamespaced: this.opts.isNamespaced });
    const user = identityOf(obj, restriction);
    if (!user) return;
    const created = Date.parse(obj.metadata.creationTimestamp ?? '');
    const key: IndexedKey = {
      name,
      hash,
      object: obj,
      created: Number.isNaN(created) ? 0 : created,
      user,
      generation: wholeNumber(obj.status?.rotations),
      previous: previousValue(obj),
      issuedWith: issuedWithOf(obj),
    };
    this.byName.set(name, key);
    addTo(this.byHash, hash, name);
    if (key.previous) addTo(this.byPreviousHash, key.previous.hash, name);
  }

  private remove(name: string): void {
    const old = this.byName.get(name);
    if (!old) return;
    this.byName.delete(name);
    removeFrom(this.byHash, old.hash, name);
    if (old.previous) removeFrom(this.byPreviousHash, old.previous.hash, name);
  }
}

/** Why `key` no longer stands for the identity `issuedTo` it was used as, or undefined while it does. */
function changedSince(key: IndexedKey, issuedTo: { name: string; groups: readonly string[] }): string | undefined {
  const name = JSON.stringify(key.name);
  if (key.user.restriction)
    return `access key ${name} has a scope or rules now; what was issued to it before is refused`;
  if (key.user.name !== issuedTo.name) return `access key ${name} acts as another identity now`;
  const lost = issuedTo.groups.find((g) => !key.user.groups.includes(g));
  if (lost !== undefined) return `access key ${name} no longer carries the group ${JSON.stringify(lost)}`;
  return undefined;
}

/** The value a key's last rotation replaced, when its status records one whole (only the server writes it). */
function previousValue(obj: OwnedAccessKey): IndexedKey['previous'] {
  const { previousKey, previousKeyExpirationTimestamp, lastRotationTimestamp } = obj.status ?? {};
  const until = isDateTime(previousKeyExpirationTimestamp) ? Date.parse(previousKeyExpirationTimestamp as string) : NaN;
  if (!isKeyHash(previousKey) || Number.isNaN(until) || previousKey === obj.spec?.key) return undefined;
  return { hash: previousKey, until, rotatedAt: lastRotationTimestamp ?? 'an unknown time' };
}

/**
 * status.issuedWith as the values it lists; [] when absent, undefined when it is not such a list (the API's schema
 * refuses that; a key stored otherwise is refused rather than freed of its chain).
 */
function issuedWithOf(obj: OwnedAccessKey): AccessKeyValue[] | undefined {
  const list: unknown = obj.status?.issuedWith;
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) return undefined;
  const values: AccessKeyValue[] = [];
  for (const v of list) {
    const { name, uid, generation } = (v ?? {}) as Record<string, unknown>;
    if (typeof name !== 'string' || typeof uid !== 'string' || !Number.isSafeInteger(generation)) return undefined;
    values.push({ name, uid, generation: generation as number });
  }
  return values;
}

function addTo(index: Map<string, Set<string>>, hash: string, name: string): void {
  let names = index.get(hash);
  if (!names) index.set(hash, (names = new Set()));
  names.add(name);
}

function removeFrom(index: Map<string, Set<string>>, hash: string, name: string): void {
  const names = index.get(hash);
  names?.delete(name);
  if (names && !names.size) index.delete(hash);
}
