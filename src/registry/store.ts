/**
 * The generic store (after kube's registry/generic/registry/store.go): create, get, list, update and delete with
 * Kubernetes object semantics for every kind. A kind only brings its definition and a small strategy.
 */
import { randomUUID } from 'node:crypto';
import {
  SERVER_USER,
  type Admission,
  type AdmissionAttributes,
  type AdmissionOperation,
} from '../apimachinery/admission.js';
import { decoded, type ObjectList } from '../apimachinery/encoded.js';
import { GoLiteral, Path, fieldError, type FieldError } from '../apimachinery/field.js';
import { objectMetaSchema } from '../apimachinery/metaschema.js';
import {
  applyObject,
  keepTimestampsOfNoopWrite,
  updateManagedFields,
  type FieldManagerContext,
} from '../apimachinery/managedfields/index.js';
import { generateName } from '../apimachinery/names.js';
import {
  dropEmptyMetadataFields,
  validateFinalizers,
  validateObjectMeta,
  validateObjectMetaUpdate,
} from '../apimachinery/objectmeta.js';
import { compileSchema, type SchemaValidator } from '../apimachinery/schema.js';
import * as errors from '../apimachinery/status.js';
import { nowRFC3339 } from '../apimachinery/time.js';
import { isPlainObject, type KubeList, type KubeObject } from '../apimachinery/types.js';
import type { UserInfo } from '../apimachinery/user.js';
import { isValidPathSegmentName, nameIsDNSSubdomain } from '../apimachinery/validation.js';
import { interpretStorageError } from '../storage/errors.js';
import { ClaimTakenError, PreconditionFailedError, StorageError } from '../storage/interface.js';
import { checkPreconditions } from '../storage/preconditions.js';
import type { CachedStorage } from '../storage/cachedstorage.js';
import { turnMemo } from '../storage/turnmemo.js';
import type { ListOptions, RunningWatch, WatchOptions, WatchSink } from '../storage/reader.js';
import { checkTypeMeta, dropUnknownFields, type FieldValidationOptions, type RestrictingFields } from './decoding.js';
import type { ResourceDefinition } from './definitions.js';
import { carryOverFields, withoutFields } from './hiddenfields.js';
import { noKindSettings, type KindSettings } from './kindsettings.js';
import { StoreView } from './readview.js';
import { checkOwnerReferencePermissions, type OwnerDeletionCheck } from './ownerpermission.js';
import { finalizersAfterDelete, type PropagationOptions } from './propagation.js';
import type { AdmitContext, AuthorizeOther, ConnectCluster, Strategy, StoreLookup } from './strategy.js';
import { mainResourceSteps, statusSteps, type UpdateSteps } from './updatesteps.js';

/** How many fresh names a generateName create tries before giving up (kube's RetryGenerateName). */
const GENERATE_NAME_ATTEMPTS = 8;

/** Where an update's new object comes from. */
export type UpdateSource<O extends KubeObject = KubeObject> =
  /** PUT: the object in the request body. */
  | { replace: KubeObject }
  /** PATCH: a function of the current object (what clients see of it), re-run if another write gets in first. */
  | { patch: (current: O) => KubeObject }
  /** Server-side apply: the merge of a configuration into the current object, managedFields included. */
  | { apply: (current: O) => KubeObject };

/** fieldValidation (unknown and duplicate fields dropped, dropped with a warning (default), or refused) and more. */
export interface WriteOptions extends FieldValidationOptions {
  /** Run every step but the write, and answer as if it had been stored (`dryRun=All`). */
  dryRun?: boolean;
  /** Who is writing, for managedFields (kube: the fieldManager parameter, else the User-Agent's product). */
  fieldManager?: string;
  /**
   * Who asks, for kinds whose rules depend on it and for the ownerReferences it may set (which need permission to
   * delete an owner, or the object written); unset for the server's own writes.
   */
  user?: UserInfo;
  /** The caller's other permissions, for the kind's admission plugin (Strategy.admission); unset for the server's own writes. */
  authorize?: AuthorizeOther;
  /** Filled by admission plugins for the request's audit event. */
  auditAnnotations?: Record<string, string>;
  /**
   * The server's own writes only (no `user`): an update of the main resource stores the status it is given as well,
   * so that a change of both is one write (an access key's rotation: the new value and the status recording it).
   */
  withStatus?: boolean;
}

export interface ApplyOptions extends WriteOptions {
  fieldManager: string;
  /** Take over fields other managers own instead of answering 409. */
  force?: boolean;
  /** Throws when the caller may not create (an apply that creates needs `create`, as in kube); unset for the server's own. */
  authorizeCreate?: () => Promise<void>;
}

export interface DeleteOptions extends WriteOptions, PropagationOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
}

export type DeleteResult<O extends KubeObject = KubeObject> = { deleted: boolean; object: O };

/**
 * What a store asks outside itself, each per request (the registry makes the stores before the authorizers and the
 * admission chain, which read it): unset in a store on its own.
 */
export interface StoreContext {
  /** The other stores, for the kind's admission plugin. */
  stores?: StoreLookup;
  /** Whether a caller may delete an owner, for the ownerReferences of its writes. */
  ownerDeletion?: () => OwnerDeletionCheck | undefined;
  /** The admission chain every write goes through (none without a host cluster). */
  admission?: () => Admission | undefined;
  /** The connected clusters, for the kind's admission plugin. */
  connectCluster?: ConnectCluster;
  /** The settings of the kind's read view (Strategy.readView); without them it shows nothing. */
  settings?: KindSettings;
}

const noOtherStores: StoreLookup = (kind) => {
  throw new Error(`no store of ${kind.kind}: this store was made without the others`);
};

const notConnected: ConnectCluster = (name) =>
  Promise.reject(errors.serviceUnavailable(`Cluster ${JSON.stringify(name)} is not connected`));

/** ObjectMeta is the same for every kind: one validator. */
const validateMetaSchema = compileSchema(objectMetaSchema, 'metadata');

/** The store of one kind; `O` is the type of its objects (`registry.store(ProjectSecret)` is a Store<ProjectSecret>). */
export class Store<O extends KubeObject = KubeObject> {
  private readonly validateSchema: SchemaValidator;
  /** What watchers are sent of each object during this turn: one copy as clients see it, encoded once for all. */
  private readonly clientViews = turnMemo<KubeObject, KubeObject>();
  /** The kind's read view, if it has one (readview.ts). */
  private readonly view?: StoreView;

  constructor(
    readonly def: ResourceDefinition,
    readonly strategy: Strategy,
    /** The kind's storage: etcd with its group's watch cache in front, which decides where each read is served. */
    private readonly storage: CachedStorage,
    private readonly prefix: string,
    private readonly context: StoreContext = {},
  ) {
    const { metadata: _m, ...properties } = def.schema.properties ?? {};
    this.validateSchema = compileSchema({ ...def.schema, properties });
    const settings = context.settings ?? noKindSettings;
    const view = strategy.readView?.(settings);
    if (view) this.view = new StoreView(view, settings.now);
  }

  async get(namespace: string | undefined, name: string, resourceVersion?: string): Promise<O> {
    const obj = await this.storageCall('get', name, () =>
      this.storage.get<KubeObject>(this.key(namespace, name), resourceVersion),
    );
    if (!obj) throw errors.notFound(this.def.groupResource, name);
    // The schema checked every stored object of the kind.
    return this.toClient(obj) as O;
  }

  /** The object, or undefined when there is none of that name (a get that finds nothing is no error here). */
  async find(namespace: string | undefined, name: string): Promise<O | undefined> {
    return this.get(namespace, name).catch((err) => {
      if (errors.isStatusError(err, 'NotFound')) return undefined;
      throw err;
    });
  }

  /** Objects in a namespace, or in all namespaces when `namespace` is undefined; items may be encoded (`decoded`). */
  async list(namespace: string | undefined, opts: ListOptions = {}): Promise<ObjectList> {
    const list = await this.storageCall('list', '', () =>
      this.storage.listObjects(this.collectionKey(namespace), opts),
    );
    if (this.strategy.hiddenFields) return { ...list, items: list.items.map((o) => this.toClient(decoded(o))) };
    const view = this.view;
    return view ? { ...list, items: list.items.map((o) => view.ofItem(o)) } : list;
  }

  watch(namespace: string | undefined, opts: WatchOptions, sink: WatchSink): Promise<RunningWatch> {
    const out: WatchSink =
      this.strategy.hiddenFields || this.view
        ? { ...sink, event: (type, obj) => sink.event(type, this.clientView(obj)) }
        : sink;
    return this.storageCall('watch', '', () => this.storage.watchObjects(this.collectionKey(namespace), opts, out));
  }

  private clientView(obj: KubeObject): KubeObject {
    const views = this.clientViews();
    let view = views.get(obj);
    if (!view) views.set(obj, (view = this.toClient(obj)));
    return view;
  }

  /**
   * What clients see of a stored object: all but its hidden fields, and what the kind's view derives now (in every
   * answer and watch event). Objects of this store's kind are `O`s.
   */
  private toClient(obj: KubeObject): O {
    const visible = this.withoutHidden(obj);
    return (this.view ? this.view.of(visible) : visible) as O;
  }

  /** The stored object without its hidden fields: what patches, applies and admission act on (not the view). */
  private withoutHidden(obj: KubeObject): O {
    return (this.strategy.hiddenFields ? withoutFields(obj, this.strategy.hiddenFields) : obj) as O;
  }

  /** A copy of the stored object without its hidden fields, for a patch or apply to change. */
  private visibleCopy(obj: KubeObject): O {
    return structuredClone(this.withoutHidden(obj));
  }

  private toStorage(obj: KubeObject): KubeObject {
    return this.strategy.toStorage ? this.strategy.toStorage(obj) : obj;
  }

  async create(namespace: string | undefined, input: KubeObject, opts: WriteOptions = {}): Promise<O> {
    return this.createObject(namespace, input, opts, true);
  }

  /** `trackFields` is false when the object comes from an apply, which set its managedFields already. */
  private async createObject(
    namespace: string | undefined,
    input: KubeObject,
    opts: WriteOptions,
    trackFields: boolean,
  ): Promise<O> {
    const obj = this.newObject(input, namespace);
    const admissionAttrs = await this.runMutatingAdmission(
      'CREATE',
      obj.metadata.namespace,
      obj.metadata.name ?? '',
      '',
      obj,
      undefined,
      opts,
    );
    if (admissionAttrs) this.checkAfterMutatingAdmission(obj, namespace);
    this.fillSystemFields(obj);
    const meta = obj.metadata;
    const generate = !meta.name && !!meta.generateName;
    if (generate) meta.name = generateName(meta.generateName!);
    const warnings = await this.beforeCreate(obj, opts);
    if (trackFields) this.recordFieldManager(obj, undefined, opts, '');
    await this.runValidatingAdmission(admissionAttrs, obj);

    const claims = this.claimKeys(obj);
    for (let attempt = 1; ; attempt++) {
      try {
        const stored = await this.storageCall('create', meta.name!, () =>
          this.storage.create(this.key(namespace, meta.name!), this.toStorage(obj), { dryRun: opts.dryRun, claims }),
        );
        opts.warnings?.push(...warnings);
        return this.strategy.createResponse
          ? (this.strategy.createResponse(this.toClient(stored), obj) as O)
          : this.toClient(stored);
      } catch (err) {
        if (err instanceof ClaimTakenError) throw this.claimTaken(obj, err, opts.user);
        if (!(err instanceof StorageError && err.code === 'KeyExists')) throw err;
        if (!generate) throw await this.alreadyExists(namespace, meta.name!);
        if (attempt === GENERATE_NAME_ATTEMPTS)
          throw errors.generateNameConflict(this.def.groupResource, meta.name!, 1);
        meta.name = generateName(meta.generateName!);
      }
    }
  }

  /** A create's object, checked as a request's body. */
  private newObject(input: KubeObject, namespace: string | undefined): KubeObject {
    const obj = structuredClone(input);
    checkTypeMeta(obj, this.def);
    this.checkMetadataTypes(obj);
    dropEmptyMetadataFields(obj.metadata);
    this.takeNamespace(obj, namespace);
    if (obj.metadata.resourceVersion)
      throw errors.badRequest('resourceVersion should not be set on objects to be created');
    return obj;
  }

  /**
   * What the server sets on a new object whatever the request said (kube's FillObjectMetaSystemFields), and no status:
   * that is its subresource's to write.
   */
  private fillSystemFields(obj: KubeObject): void {
    const meta = obj.metadata;
    delete meta.selfLink;
    delete meta.deletionTimestamp;
    delete meta.deletionGracePeriodSeconds;
    meta.uid = randomUUID();
    meta.creationTimestamp = nowRFC3339();
    meta.generation = 1;
    if (this.def.hasStatus) delete obj.status;
  }

  /**
   * The steps of a create from the kind's preparation to its checks against other objects, in this order (kube's
   * rest.BeforeCreate, then admission): prepared, unknown fields dropped, validated, warned about, admitted by the
   * kind, its ownerReferences allowed. Answers the warnings, for the write that succeeds.
   */
  private async beforeCreate(obj: KubeObject, opts: WriteOptions): Promise<string[]> {
    this.strategy.prepareForCreate?.(obj, opts.user);
    dropUnknownFields(obj, this.def.schema, this.def, opts, this.restricting());
    const errs = this.validate(obj);
    if (errs.length) throw errors.invalid(this.def.groupKind, obj.metadata.name ?? '', errs);
    const warnings = this.strategy.warningsOnCreate?.(obj) ?? [];
    await this.strategy.admission?.admitCreate?.(obj, opts, this.admitContext());
    await this.checkOwnerPermissions(obj, undefined, opts);
    return warnings;
  }

  /** PUT and PATCH of the object or of its status subresource. */
  async update(
    namespace: string | undefined,
    name: string,
    source: UpdateSource<O>,
    subresource?: 'status',
    opts: WriteOptions = {},
  ): Promise<O> {
    const key = this.key(namespace, name);
    // The one choice between the main resource and its status: each has its own steps (updatesteps.ts).
    const steps =
      subresource === 'status'
        ? statusSteps(this.def, this.strategy)
        : mainResourceSteps(this.def, this.strategy, { withStatus: !opts.user && opts.withStatus === true });
    steps.checkWriter(namespace, name, 'replace' in source ? 'update' : 'patch', opts.user);
    // Those of the attempt that wrote (guaranteedUpdate may run the function again on a conflict).
    let warnings: string[] = [];
    const result = await this.storageCall('update', name, () =>
      this.storage.guaranteedUpdate<KubeObject>(
        key,
        async (current) => {
          const updated = this.updatedObject(source, current, namespace, name);
          // Mutating admission comes before the resourceVersion check, as kube's update transformers do.
          const admissionAttrs = await this.runMutatingAdmission(
            'UPDATE',
            namespace,
            name,
            steps.subresource,
            updated,
            current,
            opts,
          );
          if (admissionAttrs) {
            this.checkAfterMutatingAdmission(updated, namespace);
            this.checkNameOnUrl(updated, namespace, name);
          }
          this.checkResourceVersion(updated, current, name);
          // A PUT's body names the object it replaces by its uid (kube's defaultUpdatedObjectInfo.Preconditions), checked
          // here rather than among the storage's preconditions, which come before this function: a body wrong in more
          // than one way is answered as it always was, for its first fault.
          if ('replace' in source) checkPreconditions(key, { uid: updated.metadata.uid }, current);
          const next = steps.take(updated, current);
          warnings = await this.beforeUpdate(steps, next, current, opts);
          if (!('apply' in source)) this.recordFieldManager(next, current, opts, steps.subresource);
          await this.runValidatingAdmission(admissionAttrs, next);
          // A write that would only refresh managedFields times changes nothing, so nothing is written.
          return keepTimestampsOfNoopWrite(this.toStorage(next), current);
        },
        // Removing the last finalizer of an object being deleted deletes it, and its claims with it.
        {
          deleteInstead: (next) => !!next.metadata.deletionTimestamp && !next.metadata.finalizers?.length,
          claims: (current) => this.claimKeys(current),
          dryRun: opts.dryRun,
        },
      ),
    );
    opts.warnings?.push(...warnings);
    return this.toClient(result.object);
  }

  /**
   * The object an update asks for, checked as a request's body: PUT's, or a patch or an apply of `current` as the
   * caller sees it (hidden fields are neither read nor written by them).
   */
  private updatedObject(
    source: UpdateSource<O>,
    current: KubeObject,
    namespace: string | undefined,
    name: string,
  ): KubeObject {
    const updated =
      'replace' in source
        ? structuredClone(source.replace)
        : 'patch' in source
          ? source.patch(this.visibleCopy(current))
          : source.apply(this.visibleCopy(current));
    if (!isPlainObject(updated)) throw errors.badRequest('the request body must be a JSON or YAML object');
    checkTypeMeta(updated, this.def);
    this.checkMetadataTypes(updated);
    dropEmptyMetadataFields(updated.metadata);
    this.checkNameOnUrl(updated, namespace, name);
    return updated;
  }

  /**
   * The steps of an update of the object to store, in this order (kube's rest.BeforeUpdate, then admission), with the
   * main resource's steps or the status's: hidden fields carried over, prepared by the kind, unknown fields dropped,
   * validated, warned about, admitted by the kind, its ownerReferences allowed, its generation counted. Answers the
   * warnings, the ratcheted rules' first.
   */
  private async beforeUpdate(
    steps: UpdateSteps,
    next: KubeObject,
    current: KubeObject,
    opts: WriteOptions,
  ): Promise<string[]> {
    if (this.strategy.hiddenFields) carryOverFields(next, current, this.strategy.hiddenFields);
    // Read with the view and written back (a PUT of what a GET answered), it stores what is stored, not the view.
    this.view?.underive(next, current);
    steps.prepare(next, current, opts.user);
    dropUnknownFields(next, this.def.schema, this.def, opts, this.restricting(current));
    const ratcheted: string[] = [];
    const errs = this.validate(next, current, ratcheted);
    if (errs.length) throw errors.invalid(this.def.groupKind, next.metadata.name ?? '', errs);
    const warnings = [...ratcheted, ...steps.warnings(next, current)];
    await steps.admit?.(next, current, opts, this.admitContext());
    await this.checkOwnerPermissions(next, current, opts);
    steps.countGeneration?.(next, current);
    return warnings;
  }

  /** What the kind's admission plugin may read and ask. */
  private admitContext(): AdmitContext {
    return { store: this.context.stores ?? noOtherStores, connectCluster: this.context.connectCluster ?? notConnected };
  }

  /**
   * Server-side apply (PATCH with application/apply-patch+yaml): merges `config` into the object, owned by
   * `opts.fieldManager`, creating the object when it does not exist yet. Conflicts with other managers are 409
   * unless `force`.
   */
  async apply(
    namespace: string | undefined,
    name: string,
    config: KubeObject,
    subresource: 'status' | undefined,
    opts: ApplyOptions,
  ): Promise<{ object: O; created: boolean }> {
    const applied = structuredClone(config);
    if (!isPlainObject(applied)) throw errors.badRequest('the apply configuration must be an object');
    // An apply configuration names its version itself (kube's field manager refuses it otherwise, with this message).
    if (applied.apiVersion !== this.def.apiVersion) {
      throw errors.badRequest(
        `Incorrect version specified in apply patch. Specified patch version: ${typeof applied.apiVersion === 'string' ? applied.apiVersion : ''}, expected: ${this.def.apiVersion}`,
      );
    }
    checkTypeMeta(applied, this.def);
    this.checkMetadataTypes(applied);
    this.checkNameOnUrl(applied, namespace, name);
    dropUnknownFields(applied, this.def.schema, this.def, opts, this.restricting());
    const merge = (live: KubeObject | undefined) =>
      applyObject(live, applied, opts.fieldManager, !!opts.force, subresource ?? '', this.fieldManagerContext());
    for (;;) {
      try {
        return { object: await this.update(namespace, name, { apply: merge }, subresource, opts), created: false };
      } catch (err) {
        if (!errors.isStatusError(err, 'NotFound') || subresource) throw err;
      }
      await opts.authorizeCreate?.();
      try {
        return { object: await this.createObject(namespace, merge(undefined), opts, false), created: true };
      } catch (err) {
        // Created by someone else in between: apply to theirs.
        if (!errors.isStatusError(err, 'AlreadyExists')) throw err;
      }
    }
  }

  /**
   * Sets the garbage-collection finalizers the propagation policy asks for, then deletes at once when the object
   * has no finalizers; otherwise marks it as being deleted (deletionTimestamp) and leaves it to the finalizers'
   * owners. One compare-and-swap decides both, so a finalizer added concurrently is never skipped.
   */
  async delete(namespace: string | undefined, name: string, opts: DeleteOptions = {}): Promise<DeleteResult<O>> {
    const key = this.key(namespace, name);
    let warnings: string[] = [];
    const res = await this.storageCall('delete', name, () =>
      this.storage.guaranteedUpdate<KubeObject>(
        key,
        async (obj) => {
          await this.runValidatingAdmission(
            await this.runMutatingAdmission('DELETE', namespace, name, '', undefined, obj, opts),
          );
          warnings = obj.metadata.deletionTimestamp ? [] : (this.strategy.warningsOnDelete?.(obj) ?? []);
          return markDeleting(obj, opts);
        },
        {
          preconditions: opts.preconditions,
          deleteInstead: (obj) => !obj.metadata.finalizers?.length,
          claims: (current) => this.claimKeys(current),
          dryRun: opts.dryRun,
        },
      ),
    );
    opts.warnings?.push(...warnings);
    return { deleted: res.deleted, object: this.toClient(res.object) };
  }

  /**
   * DELETE on a collection: deletes every object the options select, one by one (not atomically, as kube),
   * and answers the list of what was deleted or is now being deleted.
   */
  async deleteCollection(namespace: string | undefined, listOpts: ListOptions, opts: DeleteOptions): Promise<KubeList> {
    const list = await this.list(namespace, { ...listOpts, limit: undefined, continue: undefined });
    const items: KubeObject[] = [];
    for (const item of list.items) {
      const obj = decoded(item);
      try {
        // Preconditions hold for each object, as kube passes the same options to every delete: the first
        // object they do not hold for ends the request with its 409.
        items.push((await this.delete(obj.metadata.namespace, obj.metadata.name!, opts)).object);
      } catch (err) {
        // Gone in the meantime: someone else deleted it, which is what was asked.
        if (!errors.isStatusError(err, 'NotFound')) throw err;
      }
    }
    return { ...list, items };
  }

  key(namespace: string | undefined, name: string): string {
    const msgs = isValidPathSegmentName(name);
    if (msgs.length) throw errors.badRequest(`Name parameter invalid: ${JSON.stringify(name)}: ${msgs.join(';')}`);
    return this.collectionKey(namespace) + name;
  }

  private collectionKey(namespace: string | undefined): string {
    const nsMsgs = namespace ? isValidPathSegmentName(namespace) : [];
    if (nsMsgs.length)
      throw errors.badRequest(`Namespace parameter invalid: ${JSON.stringify(namespace)}: ${nsMsgs.join(';')}`);
    const base = `${this.prefix}/${this.def.group}/${this.def.plural}/`;
    return this.def.namespaced && namespace ? `${base}${namespace}/` : base;
  }

  /**
   * Runs the mutating admission plugins on a write (they may change `object`); answers the attributes for the
   * validating ones, or undefined when there is no admission. The server's own writes go through it too.
   */
  private async runMutatingAdmission(
    operation: AdmissionOperation,
    namespace: string | undefined,
    name: string,
    subresource: string,
    object: KubeObject | undefined,
    oldObject: KubeObject | undefined,
    opts: WriteOptions,
  ): Promise<AdmissionAttributes | undefined> {
    const admission = this.context.admission?.();
    if (!admission) return undefined;
    const attrs: AdmissionAttributes = {
      operation,
      group: this.def.group,
      version: this.def.version,
      kind: this.def.kind,
      resource: this.def.plural,
      subresource,
      namespace: (this.def.namespaced && namespace) || '',
      name,
      object: object && this.withoutHidden(object),
      oldObject: oldObject && this.withoutHidden(oldObject),
      user: opts.user ?? SERVER_USER,
      dryRun: !!opts.dryRun,
      warnings: opts.warnings ?? [],
      auditAnnotations: opts.auditAnnotations ?? {},
    };
    await admission.admit(attrs);
    if (object && attrs.object !== object) this.takeMutated(object, attrs.object!);
    return attrs;
  }

  /**
   * Admission sees what a reader sees (webhooks and policies are other parties: a new key or its hash must not reach
   * them), so it mutated a copy without the hidden fields: its changes go into `object`, which keeps its own.
   */
  private takeMutated(object: KubeObject, mutated: KubeObject): void {
    carryOverFields(mutated, object, this.strategy.hiddenFields ?? []);
    for (const key of Object.keys(object)) delete object[key];
    Object.assign(object, mutated);
  }

  /** The kind's restricting parts, for field validation; `old` is the stored object of an update. */
  private restricting(old?: KubeObject): RestrictingFields | undefined {
    const paths = this.strategy.restrictingFields;
    return paths?.length ? { paths, old } : undefined;
  }

  /** What a mutating webhook's patch may have broken: the same checks as on the request's own body. */
  private checkAfterMutatingAdmission(obj: KubeObject, namespace: string | undefined): void {
    checkTypeMeta(obj, this.def);
    this.checkMetadataTypes(obj);
    dropEmptyMetadataFields(obj.metadata);
    this.takeNamespace(obj, namespace);
  }

  /** The validating plugins, on `object` as it will be stored (seen, as by the mutating ones, without the hidden fields). */
  private async runValidatingAdmission(attrs: AdmissionAttributes | undefined, object?: KubeObject): Promise<void> {
    if (!attrs) return;
    await this.context.admission?.()?.validate(object ? { ...attrs, object: this.withoutHidden(object) } : attrs);
  }

  /** The namespace comes from the path; a different one in the body is refused. */
  private takeNamespace(obj: KubeObject, namespace: string | undefined): void {
    if (!this.def.namespaced) {
      delete obj.metadata.namespace;
      return;
    }
    if (obj.metadata.namespace && obj.metadata.namespace !== namespace) {
      throw errors.badRequest('the namespace of the provided object does not match the namespace sent on the request');
    }
    obj.metadata.namespace = namespace;
  }

  private checkNameOnUrl(obj: KubeObject, namespace: string | undefined, name: string): void {
    this.takeNamespace(obj, namespace);
    if (obj.metadata.name !== name) {
      throw errors.badRequest(
        `the name of the object (${obj.metadata.name ?? ''}) does not match the name on the URL (${name})`,
      );
    }
  }

  /** Updates are always conditional: the object must carry the resourceVersion it was read at. */
  private checkResourceVersion(obj: KubeObject, current: KubeObject, name: string): void {
    const rv = obj.metadata.resourceVersion;
    if (rv === undefined || rv === '') {
      const field = fieldError.invalid(
        'metadata.resourceVersion',
        new GoLiteral('0x0'),
        'must be specified for an update',
      );
      throw errors.invalid({ group: this.def.group, kind: this.def.plural }, name, [field]);
    }
    if (typeof rv !== 'string' || !/^[0-9]+$/.test(rv)) {
      throw errors.invalid(this.def.groupKind, name, [
        fieldError.invalid('metadata.resourceVersion', rv, 'must be the resourceVersion the object was read at'),
      ]);
    }
    if (rv !== current.metadata.resourceVersion)
      throw errors.conflict(this.def.groupResource, name, errors.OBJECT_MODIFIED);
  }

  /** What the field manager needs to know of this kind and this moment. */
  private fieldManagerContext(): FieldManagerContext {
    return {
      apiVersion: this.def.apiVersion,
      now: nowRFC3339(),
      schema: this.def.schema,
      hasStatusSubresource: this.def.hasStatus,
    };
  }

  /** Records in managedFields which fields this (non-apply) write set, as an Update by its field manager. */
  private recordFieldManager(
    obj: KubeObject,
    live: KubeObject | undefined,
    opts: WriteOptions,
    subresource: string,
  ): void {
    const entries = updateManagedFields(
      live,
      obj,
      opts.fieldManager || 'unknown',
      subresource,
      this.fieldManagerContext(),
    );
    if (entries.length) obj.metadata.managedFields = entries;
    else delete obj.metadata.managedFields;
  }

  /**
   * Metadata as the request sent it must be of ObjectMeta's types, before the server sets or clears the fields it
   * owns (namespace of a cluster-scoped object, selfLink, uid, generation, timestamps): kube decodes ObjectMeta
   * first and refuses a wrongly typed field even where it would overwrite the value.
   */
  private checkMetadataTypes(obj: KubeObject): void {
    const errs = validateMetaSchema(obj.metadata);
    if (errs.length)
      throw errors.invalid(this.def.groupKind, typeof obj.metadata.name === 'string' ? obj.metadata.name : '', errs);
  }

  /**
   * Checks types against the schema first (the caller has pruned unknown fields already); only well-typed
   * input then meets the metadata rules and the kind's own rules, so those never trip over a wrong type.
   */
  private validate(obj: KubeObject, old?: KubeObject, warnings?: string[]): FieldError[] {
    const { metadata, ...body } = obj;
    // An update may keep schema errors in what it leaves as it was (kube's ratcheting; schema.ts).
    const schemaErrs = [...validateMetaSchema(metadata), ...this.validateSchema(body, old && withoutMetadata(old))];
    if (schemaErrs.some((e) => e.type === 'FieldValueTypeInvalid'))
      return [...schemaErrs, ...this.def.validationRules(obj, old, schemaErrs)];
    // Finalizer names are checked on update too, so no update can add one that create would refuse.
    const metaErrs = old
      ? [
          ...validateObjectMetaUpdate(metadata, old.metadata),
          ...validateFinalizers(metadata.finalizers, Path.root('metadata').child('finalizers')),
        ]
      : validateObjectMeta(metadata, { namespaced: this.def.namespaced, nameFn: nameIsDNSSubdomain });
    const errs = [...schemaErrs, ...metaErrs];
    // The CRD's x-kubernetes-validations rules, after the schema and metadata as in kube (`warnings`: those ratcheted).
    errs.push(...this.def.validationRules(obj, old, errs, warnings));
    if (old && this.strategy.validateUpdate) errs.push(...this.strategy.validateUpdate(obj, old));
    else errs.push(...(this.strategy.validate?.(obj) ?? []));
    return errs;
  }

  private async checkOwnerPermissions(obj: KubeObject, old: KubeObject | undefined, opts: WriteOptions): Promise<void> {
    const { user } = opts;
    if (!user) return;
    // Never skipped for want of the check: a client's write that needs it fails instead.
    const check = this.context.ownerDeletion?.() ?? missingOwnerDeletionCheck;
    const errs = await checkOwnerReferencePermissions(obj, old, (ref, namespace) => check(user, ref, namespace));
    if (errs.length) throw errors.invalid(this.def.groupKind, obj.metadata.name ?? '', errs);
  }

  /**
   * A DELETE's 409 for preconditions that do not hold, in kube's words for it (rest.BeforeDelete's, which name the
   * kind where other conflicts name the resource), not storage's.
   */
  private deletePreconditionFailed(err: PreconditionFailedError, name: string): errors.StatusError {
    const gr = { group: this.def.group, resource: this.def.kind };
    return err.precondition === 'uid'
      ? errors.conflict(
          gr,
          name,
          `the UID in the precondition (${err.expected}) does not match the UID in record (${err.actual}). The object might have been deleted and then recreated`,
        )
      : errors.conflict(
          gr,
          name,
          `the ResourceVersion in the precondition (${err.expected}) does not match the ResourceVersion in record (${err.actual}). The object might have been modified`,
        );
  }

  /** 409 for a taken name; kube says so differently when the holder is on its way out. */
  private async alreadyExists(namespace: string | undefined, name: string): Promise<errors.StatusError> {
    const existing = await this.storage.get<KubeObject>(this.key(namespace, name)).catch(() => undefined);
    const err = errors.alreadyExists(this.def.groupResource, name);
    if (existing?.metadata.deletionTimestamp) err.status.message = `object is being deleted: ${err.status.message}`;
    return err;
  }

  /**
   * The etcd keys of the strategy's claims of `obj`: `<prefix>/claims/<group>/<resource>/<claim>`, outside the
   * group's keys that the watch cache reads.
   */
  private claimKeys(obj: KubeObject): string[] {
    const claims = this.strategy.claims?.of(obj) ?? [];
    return [...new Set(claims)].map((claim) => `${this.prefix}/claims/${this.def.group}/${this.def.plural}/${claim}`);
  }

  /** The kind's 409 for a create whose claim `err.holder` holds. */
  private claimTaken(obj: KubeObject, err: ClaimTakenError, user: UserInfo | undefined): Error {
    const base = this.collectionKey(undefined);
    const [namespace, name] = err.holder.key.startsWith(base)
      ? this.def.namespaced
        ? err.holder.key.slice(base.length).split('/')
        : [undefined, err.holder.key.slice(base.length)]
      : [undefined, err.holder.key];
    return this.strategy.claims!.taken(obj, { namespace, name: name ?? '' }, user);
  }

  /**
   * Storage failures in terms of this resource (a taken name or claim is the caller's to answer: see createObject; a
   * DELETE's preconditions that do not hold have words of their own, as in kube).
   */
  private async storageCall<T>(operation: string, name: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof StorageError && (err.code === 'KeyExists' || err.code === 'ClaimTaken')) throw err;
      if (err instanceof PreconditionFailedError && operation === 'delete')
        throw this.deletePreconditionFailed(err, name);
      throw interpretStorageError(err, { groupResource: this.def.groupResource, name, operation });
    }
  }
}

/**
 * A DELETE's change to the object: the finalizers its propagation policy asks for, and, while finalizers remain,
 * deletionTimestamp (kept once set: it never moves) with a grace period of 0, as kube does for kinds without
 * graceful deletion.
 */
function markDeleting(obj: KubeObject, opts: PropagationOptions): KubeObject {
  const meta = obj.metadata;
  const finalizers = finalizersAfterDelete(meta.finalizers, opts);
  if (finalizers.length) meta.finalizers = finalizers;
  else delete meta.finalizers;
  if (finalizers.length && !meta.deletionTimestamp) {
    meta.deletionTimestamp = nowRFC3339();
    meta.deletionGracePeriodSeconds = 0;
    meta.generation = (meta.generation ?? 0) + 1;
  }
  return obj;
}

const missingOwnerDeletionCheck: OwnerDeletionCheck = () =>
  Promise.reject(new Error('no owner deletion check was given to the registry (RegistryDependencies.ownerDeletion)'));

/** What the kind's schema checks of an object: all but its metadata, which has a validator of its own. */
function withoutMetadata({ metadata: _m, ...body }: KubeObject): Omit<KubeObject, 'metadata'> {
  return body;
}
