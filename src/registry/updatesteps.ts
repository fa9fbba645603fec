/**
 * What an update of the main resource and one of its status subresource do differently, chosen once per update
 * (Store.update), as kube serves the status from a store of its own whose update strategy is the status's
 * (apiextensions-apiserver status_strategy.go). Both run in the one order of Store.beforeUpdate.
 */
import { jsonEqual } from '../apimachinery/equality.js';
import * as errors from '../apimachinery/status.js';
import { sameInstant } from '../apimachinery/time.js';
import type { KubeObject } from '../apimachinery/types.js';
import { isMaster, type UserInfo } from '../apimachinery/user.js';
import type { ResourceDefinition } from './definitions.js';
import type { AdmitContext, Caller, KindAdmission, StatusStrategy, UpdateStrategy } from './strategy.js';

export interface UpdateSteps {
  /** '' or 'status': what admission and managedFields are told. */
  readonly subresource: '' | 'status';
  /** Refuses a caller this endpoint never takes, before anything is read; `verb` is update or patch. */
  checkWriter(namespace: string | undefined, name: string, verb: string, user: UserInfo | undefined): void;
  /** The object to store: what this endpoint takes of the request's, the rest as stored. */
  take(obj: KubeObject, current: KubeObject): KubeObject;
  /** The kind's preparation of it. */
  prepare(obj: KubeObject, old: KubeObject, user: UserInfo | undefined): void;
  /** The kind's warnings about it, once it is valid. */
  warnings(obj: KubeObject, old: KubeObject): string[];
  /** The kind's admission plugin, after validation; none for the status. */
  admit?(obj: KubeObject, old: KubeObject, caller: Caller, context: AdmitContext): Promise<void>;
  /** A new generation when the write changed what generation counts; none for the status. */
  countGeneration?(obj: KubeObject, old: KubeObject): void;
}

/** PUT, PATCH and apply of the object itself. */
export function mainResourceSteps(
  def: ResourceDefinition,
  strategy: UpdateStrategy & { admission?: KindAdmission },
  { withStatus = false }: { withStatus?: boolean } = {},
): UpdateSteps {
  return {
    subresource: '',
    checkWriter: () => {},
    take: (obj, current) => mainUpdate(def, obj, current, withStatus),
    prepare: (obj, old, user) => strategy.prepareForUpdate?.(obj, old, user),
    warnings: (obj, old) => strategy.warningsOnUpdate?.(obj, old) ?? [],
    admit: async (obj, old, caller, context) => strategy.admission?.admitUpdate?.(obj, old, caller, context),
    countGeneration(obj, old) {
      if (specChanged(def, obj, old)) obj.metadata.generation = (old.metadata.generation ?? 0) + 1;
    },
  };
}

/** PUT, PATCH and apply of /status. */
export function statusSteps(def: ResourceDefinition, strategy: StatusStrategy): UpdateSteps {
  return {
    subresource: 'status',
    checkWriter: (namespace, name, verb, user) => checkStatusWriter(def, namespace, name, verb, user),
    take: statusUpdate,
    prepare: (obj, old, user) => strategy.prepareForStatusUpdate?.(obj, old, user),
    // kube's status strategy warns of nothing: the spec is not the status writer's to correct.
    warnings: () => [],
  };
}

/**
 * A write to the main resource: status (unless the server writes both at once: WriteOptions.withStatus) and
 * server-owned metadata stay as stored.
 */
function mainUpdate(def: ResourceDefinition, obj: KubeObject, current: KubeObject, withStatus: boolean): KubeObject {
  if (def.hasStatus && !withStatus) {
    if (current.status === undefined) delete obj.status;
    else obj.status = current.status;
  }
  const meta = obj.metadata;
  const old = current.metadata;
  delete meta.selfLink;
  meta.generation = old.generation;
  meta.uid ||= old.uid;
  if (!meta.creationTimestamp || sameInstant(meta.creationTimestamp, old.creationTimestamp))
    meta.creationTimestamp = old.creationTimestamp;
  if (old.deletionTimestamp) meta.deletionTimestamp = old.deletionTimestamp;
  if (old.deletionGracePeriodSeconds !== undefined && meta.deletionGracePeriodSeconds === undefined) {
    meta.deletionGracePeriodSeconds = old.deletionGracePeriodSeconds;
  }
  return obj;
}

/** A write to /status: only status is taken from the request. */
function statusUpdate(obj: KubeObject, current: KubeObject): KubeObject {
  const next = structuredClone(current);
  if (obj.status === undefined) delete next.status;
  else next.status = obj.status;
  return next;
}

/** generation counts changes outside metadata (and outside status, which has its own subresource). */
function specChanged(def: ResourceDefinition, next: KubeObject, current: KubeObject): boolean {
  const strip = (o: KubeObject) => {
    const { metadata: _m, status, ...rest } = o;
    return def.hasStatus ? rest : { ...rest, status };
  };
  return !jsonEqual(strip(next), strip(current));
}

/**
 * A status reports what the server observed (a Cluster's health, an access sync's outcome, a key's last use): only
 * the server and system:masters write it, whatever an owner, an access entry or host RBAC grants. A fake condition
 * would otherwise be believed by every reader.
 */
function checkStatusWriter(
  def: ResourceDefinition,
  namespace: string | undefined,
  name: string,
  verb: string,
  user: UserInfo | undefined,
): void {
  if (!user || isMaster(user)) return;
  const scope = def.namespaced && namespace ? `in the namespace ${JSON.stringify(namespace)}` : 'at the cluster scope';
  throw errors.forbidden(
    def.groupResource,
    name,
    `User ${JSON.stringify(user.name)} cannot ${verb} resource ${JSON.stringify(`${def.plural}/status`)} in API group ${JSON.stringify(def.group)} ${scope}: the status of ${def.plural} is written by the server and by members of system:masters only`,
  );
}
