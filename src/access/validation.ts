/**
 * The write rules of the owner/access model (model.ts), the same for every kind with access lists and every write
 * path (the kinds' strategies run them on create, update, patch, apply and dry run; the import action on what it
 * creates): the owner and entries are well formed; only the owner, an entry granting `*` or system:masters may
 * change who has access; only system:masters may change an administrator's field or name one of Kubernetes' own
 * identities; a caller outside system:masters creates only what it or its team owns.
 */
import { jsonEqual } from '../apimachinery/equality.js';
import { Path, fieldError, type FieldError } from '../apimachinery/field.js';
import * as errors from '../apimachinery/status.js';
import { isPlainObject, type KubeObject } from '../apimachinery/types.js';
import { isMaster, teamsOf, type UserInfo } from '../apimachinery/user.js';
import { objectGrants, type AccessEntry, type Owner, type OwnedSpec } from './model.js';

const VERB = /^[a-z]+$/;
const SUBRESOURCE = /^[a-z]+$/;
/** Kubernetes' own identities: system:anonymous, system:serviceaccount:<ns>:<name>, system:node:<name>, ... */
const SYSTEM_PREFIX = 'system:';
const spec = Path.root('spec');

/** For the import action's request; the kinds' CRDs have this rule (x-kubernetes-validations). */
export function validateOwner(owner: Owner | undefined, path: Path): FieldError[] {
  if (owner?.user && owner?.team)
    return [
      fieldError.forbidden(
        path.child('team'),
        'may not be set together with user: an owner is either a user or a team',
      ),
    ];
  return [];
}

/** Each entry grants one or more verbs (to at least one user or team: a rule of the CRDs says that). */
export function validateAccess(entries: AccessEntry[] | undefined, path: Path): FieldError[] {
  const errs: FieldError[] = [];
  (entries ?? []).forEach((entry, i) => {
    const at = path.index(i);
    if (!entry.verbs?.length)
      errs.push(fieldError.required(at.child('verbs'), "at least one verb is required ('*' for all)"));
    errs.push(
      ...validateWords(
        entry.verbs,
        at.child('verbs'),
        VERB,
        "must be '*' or a lowercase verb such as get, list, watch, create, update, patch or delete",
      ),
    );
    errs.push(
      ...validateWords(
        entry.subresources,
        at.child('subresources'),
        SUBRESOURCE,
        "must be '*' or a lowercase subresource name such as status",
      ),
    );
    errs.push(...validateNames(entry.users, at.child('users')));
    errs.push(...validateNames(entry.teams, at.child('teams')));
  });
  return errs;
}

/** The verbs an access entry can grant: those of the requests this server authorizes (actions are create and get). */
const KNOWN_VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];

/**
 * A verb no request ever has grants nothing, most likely a typo ("reed"): allowed, as RBAC allows any verb, but
 * worth a warning naming the field.
 */
export function accessWarnings(entries: AccessEntry[] | undefined, path: Path): string[] {
  const known = `known verbs: ${KNOWN_VERBS.join(', ')}, '*' for all`;
  return (entries ?? []).flatMap((entry, i) =>
    (entry.verbs ?? []).flatMap((verb, j) =>
      verb === '*' || KNOWN_VERBS.includes(verb)
        ? []
        : [`${path.index(i).child('verbs').index(j)}: unknown verb ${JSON.stringify(verb)} grants nothing; ${known}`],
    ),
  );
}

function validateWords(values: string[] | undefined, path: Path, pattern: RegExp, detail: string): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  (values ?? []).forEach((v, i) => {
    if (v !== '*' && !pattern.test(v)) errs.push(fieldError.invalid(path.index(i), v, detail));
    else if (seen.has(v)) errs.push(fieldError.duplicate(path.index(i), v));
    seen.add(v);
  });
  return errs;
}

function validateNames(values: string[] | undefined, path: Path): FieldError[] {
  const errs: FieldError[] = [];
  const seen = new Set<string>();
  (values ?? []).forEach((v, i) => {
    if (v.trim() === '') errs.push(fieldError.invalid(path.index(i), v, 'must be a non-empty name'));
    else if (seen.has(v)) errs.push(fieldError.duplicate(path.index(i), v));
    seen.add(v);
  });
  return errs;
}

/**
 * Who may change who has access: an update that changes `spec.owner` or `spec.access` needs the object's owner,
 * an access entry granting `*`, or system:masters. Otherwise an entry granting only `update` could grant its
 * holder everything (as RBAC refuses escalation).
 */
export function guardAccessChanges(
  resource: string,
  obj: KubeObject<OwnedSpec>,
  old: KubeObject<OwnedSpec>,
  user: UserInfo | undefined,
): void {
  if (!user || isMaster(user)) return;
  if (jsonEqual(obj.spec?.owner, old.spec?.owner) && jsonEqual(obj.spec?.access, old.spec?.access)) return;
  // The owner, or an entry granting every verb: what the stored object grants for `*` (on the object itself).
  if (objectGrants(resource, old, user, '*')) return;
  const group = (old.apiVersion ?? '').split('/')[0];
  throw errors.forbidden(
    { group, resource },
    old.metadata.name ?? '',
    `User ${JSON.stringify(user.name)} cannot change spec.owner or spec.access: only the owner, an access entry granting "*", or system:masters may`,
  );
}

/** A field of `spec` that only system:masters may change (an administrator's policy, not the owner's). */
export interface AdminField {
  /** Its path, for the message: "spec.allowedClusters". */
  path: string;
  /** Its value, normalised so that an unset field equals its default. */
  value(spec: Record<string, unknown>): unknown;
}

/**
 * Policy fields (a Project's allowed clusters, a Cluster's connection and unusable mark) are the administrator's:
 * outside system:masters a write that changes one is 403 naming it, whoever the caller is, owner included. A create
 * (no `old`) changes every field it sets to other than its default.
 */
export function guardAdminFields(
  resource: string,
  fields: readonly AdminField[],
  obj: KubeObject,
  old: KubeObject | undefined,
  user: UserInfo | undefined,
): void {
  if (!user || isMaster(user) || !fields.length) return;
  const before = old?.spec ?? {};
  const changed = fields.filter((f) => !jsonEqual(f.value(obj.spec ?? {}), f.value(before))).map((f) => f.path);
  if (!changed.length) return;
  const group = (obj.apiVersion ?? '').split('/')[0];
  const what = old ? `change ${changed.join(', ')}` : `create this object with ${changed.join(', ')} set`;
  throw errors.forbidden(
    { group, resource },
    obj.metadata.name ?? '',
    `User ${JSON.stringify(user.name)} cannot ${what}: only system:masters may`,
  );
}

/**
 * Outside system:masters, spec.owner.user and the users of spec.access may not name one of Kubernetes' own
 * identities: the access sync grants them in the host cluster, where `system:anonymous` would open the object to
 * anyone and `system:serviceaccount:...` to a workload. Names already stored in the same field (the owner, or
 * any access entry) are left alone, since a master may have set them: only what this write adds is checked, and a
 * name a master granted access to cannot be made the owner. Teams become groups `platform:team:<team>`, never
 * `system:` ones.
 */
function systemNameErrors(obj: KubeObject, old: KubeObject | undefined, user: UserInfo | undefined): FieldError[] {
  if (!user || isMaster(user)) return [];
  const stored = new Set<string>();
  const named = (o: KubeObject | undefined, visit: (name: string, at: Path, field: 'owner' | 'access') => void) => {
    const s = o?.spec;
    if (!isPlainObject(s)) return;
    if (isPlainObject(s.owner) && typeof s.owner.user === 'string')
      visit(s.owner.user, spec.child('owner').child('user'), 'owner');
    if (!Array.isArray(s.access)) return;
    s.access.forEach((entry: unknown, i: number) => {
      const users = isPlainObject(entry) && Array.isArray(entry.users) ? entry.users : [];
      users.forEach(
        (u: unknown, j: number) =>
          typeof u === 'string' && visit(u, spec.child('access').index(i).child('users').index(j), 'access'),
      );
    });
  };
  named(old, (name, _at, field) => stored.add(`${field}/${name}`));
  const errs: FieldError[] = [];
  named(obj, (name, at, field) => {
    if (name.startsWith(SYSTEM_PREFIX) && !stored.has(`${field}/${name}`)) {
      errs.push(
        fieldError.invalid(
          at,
          name,
          `names one of Kubernetes' own identities (${SYSTEM_PREFIX}...), which only system:masters may grant access to`,
        ),
      );
    }
  });
  return errs;
}

/** Refuses (422) a write that adds a `system:` name outside system:masters (see systemNameErrors). */
export function refuseSystemNames(obj: KubeObject, old: KubeObject | undefined, user: UserInfo | undefined): void {
  const errs = systemNameErrors(obj, old, user);
  if (errs.length)
    throw errors.invalid(
      { group: (obj.apiVersion ?? '').split('/')[0], kind: obj.kind ?? '' },
      obj.metadata?.name ?? '',
      errs,
    );
}

/**
 * Why a caller outside system:masters may not make `owner` (given at `at`) the owner of something new: only itself
 * or a team it belongs to may be (as with access keys); handing ownership to anyone else is for system:masters.
 * An owner may still pass its object on by an update. Undefined when it may.
 */
export function ownerGivenAway(owner: Owner | undefined, user: UserInfo | undefined, at: Path): string | undefined {
  if (!isPlainObject(owner) || !user || isMaster(user)) return undefined;
  const tail =
    'a caller may name only itself or a team it belongs to, and only system:masters may make someone else the owner';
  if (owner.user !== undefined && owner.user !== user.name)
    return `${at.child('user')}: may not be ${JSON.stringify(owner.user)}: ${tail}`;
  if (owner.team !== undefined && !teamsOf(user).includes(owner.team))
    return `${at.child('team')}: may not be ${JSON.stringify(owner.team)}, a team the caller is not in: ${tail}`;
  return undefined;
}
