/**
 * OwnedAccessKey: an access key that authenticates API requests as `Authorization: Bearer <key>`.
 *
 * Key material
 * - On create, a missing (or empty) `spec.key` is generated: 32 bytes from the system's cryptographic random source
 *   (256 bits), base64url-encoded behind the recognisable prefix `pak_`.
 * - At rest only `sha256:<hex>` of the key is kept (`toStorage`); a client's key can never start with `sha256:`, so
 *   a stored hash is never mistaken for a key and vice versa.
 * - `spec.key` and `spec.identity.connectorData` are hidden fields (`hiddenFields`, see registry/hiddenfields.ts):
 *   no answer or watch event shows them, patches and applies act on the key without them, and every update
 *   carries them over. The answer to the create alone carries the key (`createResponse`), with a `Warning` saying so.
 * - kubectl's last-applied-configuration annotation would copy both into metadata, so they are removed from it.
 * - An update that leaves the key out keeps the stored hash; one that sends the same key is accepted; any other key
 *   is 422 `spec.key: Invalid value: "<redacted>": field is immutable`. No message ever echoes a key.
 * - `identity.connectorData` is stored when a client sends it (by PUT, or by a patch or apply that sets it) and is
 *   kept when an update sends `identity` without it (clients never see it, so a read-modify-write must not erase it).
 *
 * Who may ask for what (the caller is the request's user; calls without one, from inside the server, are trusted)
 * - With none of user, team and subject, `spec.user` defaults to the caller (a team key's caller,
 *   `platform:team:<t>`, defaults `spec.team` to `<t>` instead).
 * - Outside system:masters a caller may only create keys for itself (`spec.user` or `spec.subject` equal to its
 *   name) or for a team it belongs to (group `platform:team:<team>`), and may not set `spec.groups`, a `spec.type`
 *   other than User, nor the fields the platform fills in for keys it makes (`identity`, `identityRefresh`,
 *   `oidcProvider`, `parent`, `oidcLogin`): 403 Forbidden.
 * - Every field of the spec restricts the key, so an unknown or duplicate field in it is refused whatever
 *   fieldValidation says (422), and `spec.scope.rules` and `spec.scope.allowPlatformCli` are read as upstream
 *   clients place them (src/access/scopespec.ts).
 * - Outside system:masters an update may only make a key weaker, since a master may have issued it with groups,
 *   a scope or a ttl its holder is not to escape: a narrower scope or rules (src/access/scopecover.ts), `disabled: true`, a
 *   ttl added or shortened. Anything else is 403 Forbidden naming the field: removing or widening scope, rules or
 *   allowPlatformCli, clearing `disabled`, removing or lengthening `ttl`, changing `ttlAfterLastActivity`,
 *   `groups`, `user`, `team`, `subject`, `type` or the platform's fields, and any write of the status subresource
 *   (only the server records `status.lastActivity`).
 * - A caller whose own credential is restricted (a scoped access key) may not create or change keys at all: the
 *   new key could otherwise carry a wider scope than the one it was made with.
 * - A key created with an access key records that value, and the ones its key was created with, in
 *   `status.issuedWith` (the server's alone: kept as written at create by every later write), and works only while
 *   each of them does (auth/accesskeys.ts): a leaked key's holder cannot make a key that outlives the leaked one's
 *   revocation. A chain is at most MAX_ISSUED_WITH long (403 beyond); a Warning on the create says what the key
 *   depends on.
 * - A create, dry run or not, is 409 AlreadyExists for a name already taken, as kube answers for every kind; that
 *   is all it tells: not whose key holds the name, and a key value already in use is not refused (a create is no
 *   oracle for key values; auth/accesskeys.ts says which key a shared value stands for).
 *
 * Rotation (actions/rotateaccesskey.ts) is the one change of a stored key: the server's own write (no user) of a new
 * value together with a status counting it (`status.rotations` one more) and keeping the replaced value's hash
 * (`status.previousKey`, hidden as spec.key is) until `status.previousKeyExpirationTimestamp`. The rotation fields
 * are the server's alone (registry/serverstatus.ts): no status write moves them, system:masters' neither.
 *
 * Expiry (auth/accesskeys.ts) counts from `metadata.creationTimestamp`, which never changes, or from
 * `status.lastActivity`, which only the server writes and never into the future: with the rules above, no write
 * outside system:masters moves it later.
 */
import { createHash, randomBytes } from 'node:crypto';
import { jsonEqual } from '../../apimachinery/equality.js';
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { GROUP_NAME } from '../../apimachinery/group.js';
import { isDateTime } from '../../apimachinery/schema.js';
import * as errors from '../../apimachinery/status.js';
import { isPlainObject, type KubeObject } from '../../apimachinery/types.js';
import { accessKeyUseOf, isMaster, TEAM_GROUP_PREFIX, teamsOf, type UserInfo } from '../../apimachinery/user.js';
import type { CreateStrategy, StatusStrategy, StoredForm, Strategy, UpdateStrategy } from '../../registry/strategy.js';
import { restrictionWidening } from '../../access/scopecover.js';
import { absentOr, isString, keepServerStatus, type ServerStatusField } from '../../registry/serverstatus.js';
import { accessKeyColumns } from './columns.js';
import { expiryReadView, isFuture, setExpirationTimestamp } from './expiry.js';
import { withMaxTtl } from './maxttl.js';
import { validateScopeAndRules } from './scope.js';
import type { OwnedAccessKey, OwnedAccessKeySpec } from './types.js';

export const RESOURCE = 'ownedaccesskeys';
const groupResource = { group: GROUP_NAME, resource: RESOURCE };

/** The group every user key carries for its user (teams: TEAM_GROUP_PREFIX in apimachinery/user.ts). */
export const USER_GROUP_PREFIX = 'platform:user:';

/** The stored form of a key: this prefix and the hex SHA-256 of the key. */
export const KEY_HASH_PREFIX = 'sha256:';
/** Generated keys start with this, so that a leaked one is recognisable (by secret scanners, by people). */
export const GENERATED_KEY_PREFIX = 'pak_';
const KEY_MAX_BYTES = 4096;
const REDACTED = '<redacted>';
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** Key types: "" and User (user managed), and the ones the platform manages itself. */
export const KEY_TYPES = [
  '',
  'User',
  'Login',
  'Other',
  'Reset',
  'OIDCRefreshToken',
  'NetworkPeer',
  'Workspace',
] as const;

const spec = Path.root('spec');

export function generateAccessKey(): string {
  return GENERATED_KEY_PREFIX + randomBytes(32).toString('base64url');
}

/** The stored form of a key: `sha256:<hex>`. */
export function hashAccessKey(key: string): string {
  return KEY_HASH_PREFIX + createHash('sha256').update(key, 'utf8').digest('hex');
}

export function isKeyHash(value: unknown): value is string {
  return typeof value === 'string' && /^sha256:[0-9a-f]{64}$/.test(value);
}

/** Whether a caller outside system:masters may have a key act as this user, team or subject. */
function mayHoldKeyFor(field: 'user' | 'team' | 'subject', value: string, user: UserInfo): boolean {
  return field === 'team' ? teamsOf(user).includes(value) : value === user.name;
}

const OWNER_FIELDS = ['user', 'team', 'subject'] as const;

/**
 * Fields the platform fills in for the keys it makes itself (single sign-on logins, refresh tokens): only the server
 * and system:masters may set or change them. Nothing in this server reads them as a grant or an identity.
 */
const PLATFORM_FIELDS = ['identity', 'identityRefresh', 'oidcProvider', 'parent', 'oidcLogin'] as const;
/** The key types a holder may give its own keys; the others are the platform's (PLATFORM_FIELDS). */
const USER_KEY_TYPES: readonly unknown[] = [undefined, null, '', 'User'];

/** kube's Forbidden message: `ownedaccesskeys.management.platform.sh "k" is forbidden: User "u" cannot ...: why`. */
function forbidden(name: string, user: UserInfo, verb: string, why: string): errors.StatusError {
  return errors.forbidden(
    groupResource,
    name,
    `User ${JSON.stringify(user.name)} cannot ${verb} resource ${JSON.stringify(RESOURCE)} in API group ${JSON.stringify(GROUP_NAME)} at the cluster scope: ${why}`,
  );
}

function describeOwner(field: string, value: string): string {
  return `${field} ${JSON.stringify(value)}`;
}

/** A credential with a scope or rules may not make or change keys: a key could then carry a wider scope. */
function checkUnrestricted(name: string, user: UserInfo, verb: 'create' | 'update'): void {
  if (user.restriction) {
    throw forbidden(name, user, verb, 'a credential with a scope or rules may not create or change access keys');
  }
}

/** The most values status.issuedWith lists: each is checked at every request made with the key. */
export const MAX_ISSUED_WITH = 8;

/** Records in status.issuedWith the access key value (and its chain) the create is made with, if any. */
function recordIssuedWith(obj: OwnedAccessKey, user: UserInfo | undefined): void {
  const use = accessKeyUseOf(user);
  if (!use) return;
  const chain = [use, ...(use.issuedWith ?? [])].map(({ name, uid, generation }) => ({ name, uid, generation }));
  if (chain.length > MAX_ISSUED_WITH)
    throw forbidden(
      obj.metadata.name ?? '',
      user!,
      'create',
      `this request's access key ${JSON.stringify(use.name)} was made with an access key, which was made with one, and so on: a key made with it would depend on ${chain.length} keys, and at most ${MAX_ISSUED_WITH} are allowed; create it with a credential that is not an access key, or with a key made with one`,
    );
  obj.status = { ...obj.status, issuedWith: chain };
}

/** Said with the create of a key made with an access key: what it depends on. */
function issuedWithWarning(obj: OwnedAccessKey): string[] {
  const parent = obj.status?.issuedWith?.[0];
  if (!parent) return [];
  return [
    `access key ${JSON.stringify(obj.metadata.name ?? '')} is made with access key ${JSON.stringify(parent.name)} and works only as long as the value of it this request used does: once ${JSON.stringify(parent.name)} is deleted, disabled or expires, or that value is rotated past its grace, both are refused (status.issuedWith)`,
  ];
}

/**
 * Whether `key` stands or falls with the access key value `use` names: it is that key, or was made with it. A
 * rotation asked with an access key is allowed only then, so that the new value never outlives the credential that
 * asked for it (actions/rotateaccesskey.ts).
 */
export function fallsWith(key: OwnedAccessKey, use: { name: string; uid: string }): boolean {
  if (key.metadata.uid === use.uid) return true;
  return (key.status?.issuedWith ?? []).some((v) => v.uid === use.uid && v.name === use.name);
}

/** Checks who a non-master caller may make a key for. */
function checkCreator(obj: OwnedAccessKey, user: UserInfo | undefined): void {
  if (!user) return;
  const name = obj.metadata.name ?? '';
  checkUnrestricted(name, user, 'create');
  const why = creationRefusal(obj, user);
  if (why) throw forbidden(name, user, 'create', why);
}

/**
 * Why `user` (with an unrestricted credential) may not create `obj` as it is, or undefined when it may: outside
 * system:masters only for itself or a team of its own, without groups, of type User, without the platform's fields.
 * Asked of a rotation too, whose new value is the key as it is (actions/rotateaccesskey.ts).
 */
export function creationRefusal(obj: OwnedAccessKey, user: UserInfo): string | undefined {
  if (isMaster(user)) return undefined;
  const s = obj.spec ?? {};
  for (const field of OWNER_FIELDS) {
    const value = s[field];
    if (typeof value !== 'string' || value === '') continue;
    if (!mayHoldKeyFor(field, value, user))
      return `may not create access keys for ${describeOwner(field, value)}; only for themself or for a team they belong to`;
  }
  if (Array.isArray(s.groups) && s.groups.length) return 'only members of system:masters may set spec.groups';
  if (!USER_KEY_TYPES.includes(s.type))
    return 'spec.type: only members of system:masters may make keys of a type other than User';
  for (const field of PLATFORM_FIELDS) {
    if (s[field] !== undefined && s[field] !== null)
      return `spec.${field}: only members of system:masters may set it (the platform fills it in for keys it makes)`;
  }
  return undefined;
}

function ownerValue(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

/** A list compared as a set (order and repeats change nothing a key does). */
function asSet(v: unknown): string {
  return JSON.stringify([...new Set((Array.isArray(v) ? v : []).map((x) => JSON.stringify(x)))].sort());
}

/** A ttl in seconds, 0 for none; undefined when it is no valid ttl (validation reports that). */
function ttlOf(v: unknown): number | undefined {
  if (v === undefined || v === null) return 0;
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 ? v : undefined;
}

/** Whether `next` removes a ttl `old` had, or makes it longer (a key without a ttl may be given any). */
function lengthensTtl(next: unknown, old: unknown): boolean {
  const n = ttlOf(next);
  const o = ttlOf(old);
  if (n === undefined || !o) return false;
  return n === 0 || n > o;
}

/** Why an update of `before` to `s` does not only weaken the key (the first field found), or undefined. */
function strengthening(s: Record<string, unknown>, before: Record<string, unknown>): string | undefined {
  for (const field of OWNER_FIELDS) {
    if (ownerValue(s[field]) !== ownerValue(before[field]))
      return `spec.${field}: only members of system:masters may change whom a key acts as`;
  }
  if (asSet(s.groups) !== asSet(before.groups))
    return 'spec.groups: only members of system:masters may change the groups of a key';
  if ((s.type ?? '') !== (before.type ?? ''))
    return 'spec.type: only members of system:masters may change the type of a key';
  for (const field of PLATFORM_FIELDS) {
    if (!jsonEqual(s[field] ?? null, before[field] ?? null))
      return `spec.${field}: only members of system:masters may change it (the platform fills it in for keys it makes)`;
  }
  const widened = restrictionWidening(s, before);
  if (widened)
    return `spec.${widened}: only members of system:masters may remove or widen the ${widened.endsWith('rules') ? 'rules' : 'scope'} of a key`;
  if (before.disabled === true && s.disabled !== true)
    return 'spec.disabled: only members of system:masters may enable a disabled key';
  if (lengthensTtl(s.ttl, before.ttl))
    return 'spec.ttl: only members of system:masters may remove or lengthen the ttl of a key';
  if ((s.ttlAfterLastActivity === true) !== (before.ttlAfterLastActivity === true)) {
    return 'spec.ttlAfterLastActivity: only members of system:masters may change when the ttl of a key starts counting';
  }
  return undefined;
}

const asRecord = (spec: OwnedAccessKeySpec | undefined) => (spec ?? {}) as Record<string, unknown>;

/** Outside system:masters an update may only weaken a key (see the top of this file). */
function checkWeakensOnly(obj: OwnedAccessKey, old: OwnedAccessKey, user: UserInfo | undefined): void {
  if (!user) return;
  const name = old.metadata.name ?? obj.metadata.name ?? '';
  checkUnrestricted(name, user, 'update');
  if (isMaster(user)) return;
  // Read as the records they are to the rules of restriction (every field is checked for its type there).
  const why = strengthening(asRecord(obj.spec), asRecord(old.spec));
  if (why) throw forbidden(name, user, 'update', why);
}

/** Removes key material from kubectl's copy of the applied configuration (kept in an annotation). */
function scrubLastApplied(obj: OwnedAccessKey): void {
  const annotations = obj.metadata.annotations;
  const text = annotations?.[LAST_APPLIED];
  if (typeof text !== 'string') return;
  let applied: unknown;
  try {
    applied = JSON.parse(text);
  } catch {
    // Not JSON: nothing kubectl could use either. It cannot be cleaned, so it is dropped when it may hold a key.
    if (/"?key"?\s*:|connectorData/.test(text)) delete annotations![LAST_APPLIED];
    return;
  }
  if (!isPlainObject(applied) || !isPlainObject(applied.spec)) return;
  const appliedSpec = applied.spec as Record<string, unknown>;
  let changed = false;
  if ('key' in appliedSpec) {
    delete appliedSpec.key;
    changed = true;
  }
  if (isPlainObject(appliedSpec.identity) && 'connectorData' in appliedSpec.identity) {
    delete appliedSpec.identity.connectorData;
    changed = true;
  }
  if (changed) annotations![LAST_APPLIED] = `${JSON.stringify(applied)}\n`;
}

function immutableKey(name: string): errors.StatusError {
  return errors.invalid({ group: GROUP_NAME, kind: 'OwnedAccessKey' }, name, [
    fieldError.invalid(spec.child('key'), REDACTED, 'field is immutable'),
  ]);
}

function validateKey(key: unknown, errs: FieldError[]): void {
  const at = spec.child('key');
  if (typeof key !== 'string') return; // the schema reports other types
  if (key === '') errs.push(fieldError.required(at, 'a key is generated when none is given'));
  else if (Buffer.byteLength(key, 'utf8') > KEY_MAX_BYTES) errs.push(fieldError.tooLong(at, KEY_MAX_BYTES));
  // eslint-disable-next-line no-control-regex -- control characters are what this refuses
  else if (/[\s\x00-\x1f\x7f]/.test(key))
    errs.push(
      fieldError.invalid(
        at,
        REDACTED,
        'must not contain whitespace or control characters (it is sent as a bearer token)',
      ),
    );
  else if (key.startsWith(KEY_HASH_PREFIX))
    errs.push(fieldError.invalid(at, REDACTED, `must not start with ${JSON.stringify(KEY_HASH_PREFIX)}`));
}

function validateStrings(values: unknown, at: Path, what: string, errs: FieldError[]): void {
  if (!Array.isArray(values)) return;
  const seen = new Set<string>();
  values.forEach((v, i) => {
    if (typeof v !== 'string') return;
    if (v.trim() === '') errs.push(fieldError.invalid(at.index(i), v, `must be a non-empty ${what}`));
    else if (seen.has(v)) errs.push(fieldError.duplicate(at.index(i), v));
    seen.add(v);
  });
}

/** The rules the schema cannot say; `key` is checked by the caller (create and update differ). */
function validateSpec(obj: OwnedAccessKey): FieldError[] {
  const s = obj.spec ?? {};
  const errs: FieldError[] = [];
  const owners = OWNER_FIELDS.filter((f) => typeof s[f] === 'string' && s[f] !== '');
  if (owners.length === 0)
    errs.push(fieldError.required(spec.child('user'), 'one of spec.user, spec.team or spec.subject is required'));
  for (const extra of owners.slice(1))
    errs.push(
      fieldError.forbidden(
        spec.child(extra),
        `may not be set together with spec.${owners[0]}: a key acts as exactly one user, team or subject`,
      ),
    );
  if (typeof s.ttl === 'number' && s.ttl < 0)
    errs.push(fieldError.invalid(spec.child('ttl'), s.ttl, 'must be greater than or equal to 0'));
  if (typeof s.type === 'string' && !(KEY_TYPES as readonly string[]).includes(s.type))
    errs.push(fieldError.notSupported(spec.child('type'), s.type, KEY_TYPES.filter(Boolean)));
  validateStrings(s.groups, spec.child('groups'), 'group name', errs);
  errs.push(...validateScopeAndRules(asRecord(s), spec));
  return errs;
}

/** Said (a `Warning` header) with every create: the key cannot be read again. */
export const KEY_SHOWN_ONCE_WARNING =
  "spec.key is shown only in this answer and can never be read again: keep it now (kubectl create -f key.yaml -o jsonpath='{.spec.key}')";

/** What is kept of a key: every field of its spec as written, the key as its hash only, never shown. */
const keyStoredForm: StoredForm<OwnedAccessKey> = {
  // Every field of a key narrows what it may do (scope, rules, disabled, ttl, ...): none is ever dropped unread.
  restrictingFields: [['spec']],
  hiddenFields: [
    ['spec', 'key'],
    ['spec', 'identity', 'connectorData'],
    ['status', 'previousKey'],
  ],

  toStorage(obj: OwnedAccessKey): KubeObject {
    const key = obj.spec?.key;
    if (typeof key !== 'string' || isKeyHash(key)) return obj;
    return { ...obj, spec: { ...obj.spec, key: hashAccessKey(key) } };
  },
};

/** A new key: its owner defaulted, who may make it checked, its key generated and shown in the answer alone. */
const keyCreate: CreateStrategy<OwnedAccessKey> = {
  prepareForCreate(obj: OwnedAccessKey, user: UserInfo | undefined): void {
    obj.spec ??= {};
    // A spec of another type is the schema's to report.
    if (!isPlainObject(obj.spec)) return;
    const s = obj.spec;
    // Only an owner that is not given at all defaults; one of the wrong type is the schema's to report.
    if (user && !OWNER_FIELDS.some((f) => s[f] !== undefined && s[f] !== null && s[f] !== '')) {
      const team =
        user.name.startsWith(TEAM_GROUP_PREFIX) && user.groups.includes(user.name)
          ? user.name.slice(TEAM_GROUP_PREFIX.length)
          : undefined;
      if (team) s.team = team;
      else s.user = user.name;
    }
    checkCreator(obj, user);
    recordIssuedWith(obj, user);
    if (s.key === undefined || s.key === null || s.key === '') s.key = generateAccessKey();
    scrubLastApplied(obj);
    setExpirationTimestamp(obj, Date.now());
  },

  validate(obj: OwnedAccessKey): FieldError[] {
    const errs = validateSpec(obj);
    validateKey(obj.spec?.key, errs);
    return errs;
  },

  // The key is in this one answer only: a plain `kubectl create -f` prints just the name, so the warning says so
  // before the key is lost.
  warningsOnCreate: (obj) => [KEY_SHOWN_ONCE_WARNING, ...issuedWithWarning(obj)],

  createResponse(shown: OwnedAccessKey, prepared: OwnedAccessKey): OwnedAccessKey {
    const key = prepared.spec?.key;
    if (typeof key !== 'string' || isKeyHash(key)) return shown;
    return { ...shown, spec: { ...shown.spec, key } };
  },
};

const rotationsOf = (obj: OwnedAccessKey): number => {
  const n = obj.status?.rotations;
  return typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : 0;
};

/**
 * Whether `obj` is a rotation of `old`: a new key value with a status counting one more rotation. Only the server's
 * own writes can carry a status into an update of the main resource (WriteOptions.withStatus), so only they can be one.
 */
function isRotation(obj: OwnedAccessKey, old: OwnedAccessKey, user: UserInfo | undefined): boolean {
  const sent = obj.spec?.key;
  return (
    !user &&
    typeof sent === 'string' &&
    sent !== '' &&
    !isKeyHash(sent) &&
    isKeyHash(old.spec?.key) &&
    hashAccessKey(sent) !== old.spec?.key &&
    rotationsOf(obj) === rotationsOf(old) + 1
  );
}

/** An update: the key kept as stored, and outside system:masters only ever weaker. */
const keyUpdate: UpdateStrategy<OwnedAccessKey> = {
  prepareForUpdate(obj: OwnedAccessKey, old: OwnedAccessKey, user: UserInfo | undefined): void {
    obj.spec ??= {};
    if (!isPlainObject(obj.spec)) return;
    const s = obj.spec;
    const stored = old.spec?.key;
    const sent = s.key;
    if (isRotation(obj, old, user)) {
      // The new value stays as sent until toStorage hashes it; the replaced one is kept for its grace.
      obj.status = { ...obj.status, previousKey: stored };
    } else if (sent === undefined || sent === null || sent === '') {
      if (stored === undefined) delete s.key;
      else s.key = stored;
    } else if (sent !== stored && (typeof sent !== 'string' || !isKeyHash(stored) || hashAccessKey(sent) !== stored)) {
      throw immutableKey(old.metadata.name ?? obj.metadata.name ?? '');
    } else {
      s.key = stored;
    }
    checkWeakensOnly(obj, old, user);
    scrubLastApplied(obj);
    setExpirationTimestamp(obj, Date.now());
  },

  /** On update the key is the stored hash by now (prepareForUpdate); a status write leaves it as stored. */
  validateUpdate(obj: OwnedAccessKey, old: OwnedAccessKey): FieldError[] {
    const errs = validateSpec(obj);
    const rotated = isRotation(obj, old, undefined) && obj.status?.previousKey === old.spec?.key;
    if (rotated) validateKey(obj.spec?.key, errs);
    else if (obj.spec?.key !== old.spec?.key)
      errs.push(fieldError.invalid(spec.child('key'), REDACTED, 'field is immutable'));
    // A last activity in the future would keep a key with ttlAfterLastActivity alive until then and ttl beyond.
    const last = obj.status?.lastActivity;
    if (typeof last === 'string' && last !== old.status?.lastActivity && isFuture(Date.parse(last), Date.now())) {
      errs.push(
        fieldError.invalid(
          Path.root('status').child('lastActivity'),
          last,
          'must not be in the future: it is the time the key was last used',
        ),
      );
    }
    return errs;
  },
};

const isCount = (v: unknown): boolean => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

/**
 * Whether a written status.issuedWith would pass validation, and so is to be put back: anything else is
 * validation's to refuse (422). Unknown fields in its entries count as passing, since pruning drops them.
 */
function isIssuedWith(v: unknown): boolean {
  return (
    Array.isArray(v) &&
    v.length <= MAX_ISSUED_WITH &&
    v.every((e) => isPlainObject(e) && typeof e.name === 'string' && typeof e.uid === 'string' && isCount(e.generation))
  );
}

/** What records the key's rotations: the server's to write (see the top of this file). */
const ROTATION_FIELDS: readonly ServerStatusField[] = [
  { name: 'rotations', wellTyped: isCount, serverWrites: 'always' },
  { name: 'lastRotationTimestamp', wellTyped: (v) => absentOr(v, isDateTime), serverWrites: 'always' },
  { name: 'previousKeyExpirationTimestamp', wellTyped: (v) => absentOr(v, isDateTime), serverWrites: 'always' },
  { name: 'previousKey', wellTyped: isString, serverWrites: 'always' },
  // Set at create (recordIssuedWith) and never changed: no write, the server's own neither, frees a key of it.
  { name: 'issuedWith', wellTyped: isIssuedWith, serverWrites: 'never' },
];
const keepRotationFields = keepServerStatus(ROTATION_FIELDS);

const keyStatus: StatusStrategy<OwnedAccessKey> = {
  /**
   * The server records a key's last use (the activity recorder passes no user); besides it, only system:masters
   * writes a status (the store's rule for every kind), and not with a scoped credential.
   */
  prepareForStatusUpdate(obj: OwnedAccessKey, old: OwnedAccessKey, user: UserInfo | undefined): void {
    if (user) checkUnrestricted(old.metadata.name ?? obj.metadata.name ?? '', user, 'update');
    keepRotationFields(obj, old, user);
    // The server's to write, from the spec and lastActivity; a value of the wrong type is validation's to refuse.
    if (obj.status !== undefined && !isPlainObject(obj.status)) return;
    const written = obj.status?.expirationTimestamp;
    if (written === undefined || isDateTime(written)) setExpirationTimestamp(obj, Date.now());
  },
};

export const ownedAccessKeyStrategy: Strategy<OwnedAccessKey> = {
  printerColumns: accessKeyColumns,
  readView: () => expiryReadView,
  withSettings: ({ accessKeyMaxTtlSeconds }) =>
    accessKeyMaxTtlSeconds ? withMaxTtl(ownedAccessKeyStrategy, accessKeyMaxTtlSeconds) : ownedAccessKeyStrategy,
  ...keyStoredForm,
  ...keyCreate,
  ...keyUpdate,
  ...keyStatus,
};
