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
 *   Outside system:masters a create names as owner only the creator or a team of the creator's (owned.ts).
 */
import type { Attributes } from '../../apimachinery/authorizer.js';
import { jsonEqual } from '../../apimachinery/equality.js';
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { GROUP_NAME } from '../../apimachinery/group.js';
import * as errors from '../../apimachinery/status.js';
import type { KubeObject } from '../../apimachinery/types.js';
import type { UserInfo } from '../../apimachinery/user.js';
import { isConfigMapKey, isDNS1123Label, isDNS1123Subdomain } from '../../apimachinery/validation.js';
import { isRecordedAs, isRecordedUser, recordUser, recordedUser, type RecordedUser } from '../recordeduser.js';
import { keepServerStatus } from '../serverstatus.js';
import type { AdmitContext, Caller, Strategy } from '../strategy.js';
import { ownedKindStrategy } from './owned.js';
import { getIfExists, projectOfNamespace } from './project.js';
import { keysColumn, secretDataErrors } from './sharedsecret.js';

const VERSION = 'v1';
const spec = Path.root('spec');
const refPath = spec.child('sharedSecretRef');
const projectSecretGK = { group: GROUP_NAME, kind: 'ProjectSecret' };
const projectSecretGR = { group: GROUP_NAME, resource: 'projectsecrets' };
/** The condition the sync keeps on a ProjectSecret with a reference. */
export const SYNCED = 'Synced';
/** The condition the delivery keeps on every ProjectSecret while a host cluster has its Secret. */
export const SECRET_DELIVERED = 'SecretDelivered';

/** A ProjectSecret's `spec.sharedSecretRef`, as the sync reads it. */
export interface SharedSecretRef {
  namespace: string;
  name: string;
  /** The keys to copy; none (undefined or empty) means all. */
  keys?: string[];
}

/** The reference of a ProjectSecret, or undefined when it holds its own data. */
export function sharedSecretRef(obj: KubeObject): SharedSecretRef | undefined {
  const r = obj.spec?.sharedSecretRef;
  return r && typeof r === 'object' && !Array.isArray(r) ? (r as SharedSecretRef) : undefined;
}

/** Who set the reference (status.referencedBy); undefined when nobody is recorded. */
export const referenceWriter = (obj: KubeObject): RecordedUser | undefined => recordedUser(obj.status?.referencedBy);

/** What a GET of the SharedSecret `ref` names, for authorization: naming it, or keeping its copy, is reading it. */
export function getSharedSecret(ref: SharedSecretRef): Omit<Attributes, 'user'> {
  return {
    verb: 'get',
    isResourceRequest: true,
    path: `/apis/${GROUP_NAME}/${VERSION}/namespaces/${ref.namespace}/sharedsecrets/${ref.name}`,
    apiGroup: GROUP_NAME,
    apiVersion: VERSION,
    namespace: ref.namespace,
    resource: 'sharedsecrets',
    subresource: '',
    name: ref.name,
  };
}

const hasData = (obj: KubeObject) => Object.keys(obj.spec?.data ?? {}).length > 0;

const validateSpec = (obj: KubeObject): FieldError[] => {
  const errs = secretDataErrors(obj);
  const ref = sharedSecretRef(obj);
  if (!ref) return errs;
  if (!ref.namespace) errs.push(fieldError.required(refPath.child('namespace'), 'the namespace of the SharedSecret'));
  else
    for (const msg of isDNS1123Label(ref.namespace))
      errs.push(fieldError.invalid(refPath.child('namespace'), ref.namespace, msg));
  if (!ref.name) errs.push(fieldError.required(refPath.child('name'), 'the name of the SharedSecret'));
  else
    for (const msg of isDNS1123Subdomain(ref.name)) errs.push(fieldError.invalid(refPath.child('name'), ref.name, msg));
  const seen = new Set<string>();
  (ref.keys ?? []).forEach((key, i) => {
    const at = refPath.child('keys').index(i);
    if (seen.has(key)) errs.push(fieldError.duplicate(at, key));
    for (const msg of isConfigMapKey(key)) errs.push(fieldError.invalid(at, key, msg));
    seen.add(key);
  });
  const owner = obj.spec?.owner ?? {};
  if (!owner.user && !owner.team)
    errs.push(
      fieldError.required(
        spec.child('owner'),
        'a ProjectSecret synced from a SharedSecret needs an owner: its data is kept only while the owner may get the SharedSecret',
      ),
    );
  return errs;
};

/**
 * ProjectSecret's prepareForStatusUpdate: status.referencedBy stays as stored, whoever writes the status
 * (system:masters and the server included): it says whose access the copy rests on, which only the writes of the
 * reference decide.
 */
const keepReferenceWriter = keepServerStatus([
  { name: 'referencedBy', wellTyped: isRecordedUser, serverWrites: 'never' },
]);

const owned = ownedKindStrategy('projectsecrets', validateSpec, { hostRbac: true });

export const projectSecretStrategy: Strategy = {
  ...owned,
  printerColumns: [
    keysColumn,
    {
      name: 'Synced',
      type: 'string',
      description: 'Whether the data follows its SharedSecret (the status of the Synced condition).',
      cell: (obj: KubeObject) => conditionStatus(obj, SYNCED),
    },
    {
      name: 'Delivered',
      type: 'string',
      description:
        'Whether the host cluster has it as a Secret of the same name (the status of the SecretDelivered condition).',
      cell: (obj: KubeObject) => conditionStatus(obj, SECRET_DELIVERED),
    },
  ],
  prepareForUpdate(obj, old, user) {
    owned.prepareForUpdate!(obj, old, user);
    // A new reference, or none any more: what was copied from the old source goes, every key of it the write leaves
    // as it was (kept as hand-written data, it would outlive its writer's access to the source); the sync refills
    // the data from a new one. Hand-written data as read, with a new reference, goes too (the new source's to fill).
    const ref = sharedSecretRef(obj);
    const before = sharedSecretRef(old);
    if (user && !jsonEqual(ref, before)) {
      if (before) dropCopied(obj, old);
      else if (ref && jsonEqual(obj.spec?.data, old.spec?.data)) delete obj.spec.data;
    }
    // No reference, no one it rests on (admitUpdate records the writer of a new one, once it is allowed).
    if (!ref && obj.status?.referencedBy !== undefined) delete obj.status.referencedBy;
  },
  prepareForStatusUpdate: keepReferenceWriter,
  async admitCreate(obj, caller, context) {
    const name = obj.metadata.name ?? '';
    await projectOfNamespace(store(context, 'projects'), obj.metadata.namespace ?? '', projectSecretGK, name);
    if (!sharedSecretRef(obj)) return;
    if (caller.user && hasData(obj)) throw handWrittenData(name, 'may not be set together with spec.sharedSecretRef');
    await admitReference(obj, caller, context);
    recordWriter(obj, caller.user);
  },
  async admitUpdate(obj, old, caller, context) {
    const ref = sharedSecretRef(obj);
    if (!ref || !caller.user) return;
    const name = obj.metadata.name ?? '';
    if (jsonEqual(ref, sharedSecretRef(old))) {
      if (!jsonEqual(obj.spec?.data ?? {}, old.spec?.data ?? {}))
        throw handWrittenData(name, 'is synced from spec.sharedSecretRef and written by the server only');
      // Whom the copy is for is the owner's to say only as someone who may read it: handing the ProjectSecret on is
      // naming the SharedSecret anew (the new owner could otherwise be one its writer may not give it to).
      if (!jsonEqual(obj.spec?.owner, old.spec?.owner)) {
        await admitReference(obj, caller, context, 'changing the owner of a ProjectSecret synced from it');
        recordWriter(obj, caller.user);
        return;
      }
      const writer = referenceWriter(old);
      // One stored before writers were recorded rests on nobody until someone who may get the source writes it; the
      // writer's own writes record them as they are now (their groups may have changed since).
      if (writer ? isRecordedAs(writer, caller.user) : await mayGet(caller, ref)) recordWriter(obj, caller.user);
      return;
    }
    if (hasData(obj)) throw handWrittenData(name, 'may not be set together with a new spec.sharedSecretRef');
    await admitReference(obj, caller, context);
    recordWriter(obj, caller.user);
  },
};

/** Drops from `obj` every key of spec.data whose value is the one `old` had: what was copied (see prepareForUpdate). */
function dropCopied(obj: KubeObject, old: KubeObject): void {
  const copied = (old.spec?.data ?? {}) as Record<string, string>;
  const kept = Object.entries((obj.spec?.data ?? {}) as Record<string, string>).filter(([k, v]) => copied[k] !== v);
  if (kept.length) obj.spec.data = Object.fromEntries(kept);
  else if (obj.spec) delete obj.spec.data;
}

/** Records the caller of a client write whose reference was just allowed (the server's own writes record nobody). */
function recordWriter(obj: KubeObject, user: UserInfo | undefined): void {
  if (user) obj.status = { ...obj.status, referencedBy: recordUser(user) };
}

async function mayGet({ user, authorize }: Caller, ref: SharedSecretRef): Promise<boolean> {
  if (!user || !authorize) return false;
  return (await authorize(getSharedSecret(ref))).decision === 'allow';
}

function conditionStatus(obj: KubeObject, type: string): string | undefined {
  const conditions = Array.isArray(obj.status?.conditions) ? obj.status.conditions : [];
  return (conditions as { type?: string; status?: string }[]).find((c) => c?.type === type)?.status;
}

function store(context: AdmitContext, resource: string) {
  return context.stores(GROUP_NAME, VERSION, resource)!;
}

function handWrittenData(name: string, what: string): Error {
  return errors.invalid(projectSecretGK, name, [
    fieldError.forbidden(
      spec.child('data'),
      `${what}: a ProjectSecret holds either its own data or the data of the SharedSecret it names (remove spec.data, or remove spec.sharedSecretRef)`,
    ),
  ]);
}

/**
 * A client naming a SharedSecret must be allowed to get it (403 naming it, whether it exists or not, so nothing is
 * learnt of it); the keys it lists must then be among the SharedSecret's (422 naming each missing one).
 */
async function admitReference(
  obj: KubeObject,
  { user, authorize }: Caller,
  context: AdmitContext,
  what = 'naming a SharedSecret',
): Promise<void> {
  const ref = sharedSecretRef(obj)!;
  const name = obj.metadata.name ?? '';
  if (user && !(await mayGet({ user, authorize }, ref)))
    throw errors.forbidden(
      projectSecretGR,
      name,
      `User ${JSON.stringify(user.name)} cannot get SharedSecret ${ref.namespace}/${ref.name} named in spec.sharedSecretRef: ${what} is a read of it, allowed to its owner, an access entry granting get, or RBAC`,
    );
  const source = await getIfExists(store(context, 'sharedsecrets'), ref.name, ref.namespace);
  if (!source) return;
  const have = source.spec?.data ?? {};
  const errs: FieldError[] = [];
  (ref.keys ?? []).forEach((key, i) => {
    if (!(key in have))
      errs.push(
        fieldError.invalid(
          refPath.child('keys').index(i),
          key,
          `SharedSecret ${ref.namespace}/${ref.name} has no such key (its keys: ${Object.keys(have).sort().join(', ') || 'none'})`,
        ),
      );
  });
  if (errs.length) throw errors.invalid(projectSecretGK, name, errs);
}
