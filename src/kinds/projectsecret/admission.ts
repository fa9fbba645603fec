/**
 * ProjectSecret's admission plugin: a new one is in the namespace of an existing Project, and a client that sets or
 * changes its reference (or the owner of one synced) must be allowed to get the SharedSecret it names, whose keys it
 * lists must exist; the writer of an allowed reference is recorded in status.referencedBy (see strategy.ts).
 */
import { decoded } from '../../apimachinery/encoded.js';
import { jsonEqual } from '../../apimachinery/equality.js';
import { Path, fieldError, type FieldError } from '../../apimachinery/field.js';
import { GROUP_NAME } from '../../apimachinery/group.js';
import * as errors from '../../apimachinery/status.js';
import type { UserInfo } from '../../apimachinery/user.js';
import { isRecordedAs, recordUser } from '../../registry/recordeduser.js';
import type { AdmitContext, Caller, KindAdmission } from '../../registry/strategy.js';
import { projectOfNamespace } from '../project/namespace.js';
import { Project } from '../project/types.js';
import { SharedSecret } from '../sharedsecret/types.js';
import { VirtualClusterInstance } from '../virtualclusterinstance/types.js';
import {
  ALL_INSTANCES,
  deliveryType,
  missingKeys,
  namedTargets,
  remoteTargets,
  type DeliveryTarget,
} from './delivery.js';
import { getSharedSecret, referenceWriter, sharedSecretRef, targetsWriter, type SharedSecretRef } from './reference.js';
import { targetRefused } from './targetaccess.js';
import type { ProjectSecret } from './types.js';

const spec = Path.root('spec');
const refPath = spec.child('sharedSecretRef');
const projectSecretGK = { group: GROUP_NAME, kind: 'ProjectSecret' };
const projectSecretGR = { group: GROUP_NAME, resource: 'projectsecrets' };

const hasData = (obj: ProjectSecret) => Object.keys(obj.spec?.data ?? {}).length > 0;

export const projectSecretAdmission: KindAdmission<ProjectSecret> = {
  async admitCreate(obj, caller, context) {
    const name = obj.metadata.name ?? '';
    await projectOfNamespace(context.store(Project), obj.metadata.namespace ?? '', projectSecretGK, name);
    await admitTargets(obj, undefined, caller, context);
    if (!sharedSecretRef(obj)) return;
    if (caller.user && hasData(obj)) throw handWrittenData(name, 'may not be set together with spec.sharedSecretRef');
    await admitReference(obj, caller, context);
    recordWriter(obj, caller.user);
  },
  async admitUpdate(obj, old, caller, context) {
    await admitTargets(obj, old, caller, context);
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
      const allowed = writer ? isRecordedAs(writer, caller.user) : await mayGet(caller, ref);
      if (allowed) recordWriter(obj, caller.user);
      // A new type asks the source for its keys, of one who may read them.
      if (deliveryType(obj) !== deliveryType(old) && (allowed || (await mayGet(caller, ref))))
        await checkSourceKeys(obj, ref, context);
      return;
    }
    if (hasData(obj)) throw handWrittenData(name, 'may not be set together with a new spec.sharedSecretRef');
    await admitReference(obj, caller, context);
    recordWriter(obj, caller.user);
  },
};

/** Records the caller of a client write whose reference was just allowed (the server's own writes record nobody). */
function recordWriter(obj: ProjectSecret, user: UserInfo | undefined): void {
  if (user) obj.status = { ...obj.status, referencedBy: recordUser(user) };
}

async function mayGet({ user, authorize }: Caller, ref: SharedSecretRef): Promise<boolean> {
  if (!user || !authorize) return false;
  return (await authorize(getSharedSecret(ref))).decision === 'allow';
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
  obj: ProjectSecret,
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
  const source = await context.store(SharedSecret).find(ref.namespace, ref.name);
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
  await checkSourceKeys(obj, ref, context);
}

/**
 * A Secret of spec.delivery.type needs keys (delivery.ts): the SharedSecret a synced one copies must give them (422
 * naming each missing key). One that does not exist yet is the sync's to report.
 */
async function checkSourceKeys(obj: ProjectSecret, ref: SharedSecretRef, context: AdmitContext): Promise<void> {
  const type = deliveryType(obj);
  const source = await context.store(SharedSecret).find(ref.namespace, ref.name);
  if (!source) return;
  const have = Object.keys(source.spec?.data ?? {});
  const copied = ref.keys?.length ? ref.keys.filter((k) => have.includes(k)) : have;
  const missing = missingKeys(type, copied);
  if (!missing.length) return;
  const from = ref.keys?.length ? 'of those spec.sharedSecretRef.keys lists' : 'among its keys';
  throw errors.invalid(projectSecretGK, obj.metadata.name ?? '', [
    fieldError.invalid(
      spec.child('delivery').child('type'),
      type,
      `a Secret of this type needs the key ${missing.join(', ')}, which SharedSecret ${ref.namespace}/${ref.name} does not give ${from}`,
    ),
  ]);
}

/**
 * A client write that sets or changes spec.delivery.targets names places the server will write to with its own
 * credential: each is asked as the caller (targetaccess.ts), '*' for every instance there is now, and the caller is
 * recorded in status.targetedBy; any refused is a 403 naming it, and nothing is stored. The recorded writer's own
 * later writes record them as they are now; other writes keep the record.
 */
async function admitTargets(
  obj: ProjectSecret,
  old: ProjectSecret | undefined,
  caller: Caller,
  context: AdmitContext,
): Promise<void> {
  const { user } = caller;
  if (!user || !remoteTargets(obj).length) return;
  if (old && jsonEqual(namedTargets(obj), namedTargets(old))) {
    const writer = targetsWriter(old);
    if (writer && isRecordedAs(writer, user)) recordTargeter(obj, user);
    return;
  }
  const namespace = obj.metadata.namespace ?? '';
  const stores = { projects: context.store(Project) };
  // Whether one may use a virtual cluster or Cluster does not depend on the namespace there: each is asked once,
  // however many entries name it ('*' in 16 namespaces would otherwise ask about every instance 16 times).
  const asked = new Set<string>();
  for (const target of await expanded(remoteTargets(obj), namespace, context)) {
    const place = `${target.kind}/${target.name}`;
    if (asked.has(place)) continue;
    asked.add(place);
    const refused = await targetRefused(target, namespace, caller, stores);
    if (refused) throw errors.forbidden(projectSecretGR, obj.metadata.name ?? '', refused);
  }
  recordTargeter(obj, user);
}

/** `targets` with each '*' as the instances of `namespace` there are now. */
async function expanded(
  targets: DeliveryTarget[],
  namespace: string,
  context: AdmitContext,
): Promise<DeliveryTarget[]> {
  if (!targets.some((t) => t.kind === 'virtualCluster' && t.name === ALL_INSTANCES)) return targets;
  const { items } = await context.store(VirtualClusterInstance).list(namespace);
  return targets.flatMap((t) =>
    t.kind === 'virtualCluster' && t.name === ALL_INSTANCES
      ? items.map((i) => ({ ...t, name: decoded(i).metadata.name! }))
      : [t],
  );
}

function recordTargeter(obj: ProjectSecret, user: UserInfo): void {
  obj.status = { ...obj.status, targetedBy: recordUser(user) };
}
