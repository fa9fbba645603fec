/**
 * ProjectSecret's admission plugin: a new one is in the namespace of an existing Project, and a client that sets or
 * changes its reference (or the owner of one synced) must be allowed to get the SharedSecret it names, whose keys it
 * lists must exist; the writer of an allowed reference is recorded in status.referencedBy (see strategy.ts).
 */
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
import { getSharedSecret, referenceWriter, sharedSecretRef, type SharedSecretRef } from './reference.js';
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
}
