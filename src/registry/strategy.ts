/**
 * What a kind adds to the generic store: rules its schema cannot say. Everything else (metadata, names,
 * resourceVersion, generation, status handling) is the store's, the same for every kind.
 */
import type { Attributes, Decision } from '../apimachinery/authorizer.js';
import type { FieldError } from '../apimachinery/field.js';
import type { ObjectList } from '../apimachinery/encoded.js';
import type { KindRef, KubeObject } from '../apimachinery/types.js';
import type { UserInfo } from '../apimachinery/user.js';
import type { FieldPath } from './hiddenfields.js';
import type { KindSettings } from './kindsettings.js';
import type { ReadView } from './readview.js';
import type { ListOptions } from '../storage/reader.js';

/** What a rule may read of another kind's store (a Store, seen from here without importing it: no cycle). */
export interface StoredObjects<O extends KubeObject = KubeObject> {
  get(namespace: string | undefined, name: string): Promise<O>;
  list(namespace: string | undefined, opts?: ListOptions): Promise<ObjectList>;
}

/** The same, with a get that answers undefined for an object that does not exist. */
export interface ReadStore<O extends KubeObject = KubeObject> extends StoredObjects<O> {
  find(namespace: string | undefined, name: string): Promise<O | undefined>;
}

/** The store of a served kind, by its handle; throws when the kind is not served (a mistake found at start). */
export type StoreLookup = <O extends KubeObject>(kind: KindRef<O>) => ReadStore<O>;

/**
 * Whether the caller may also do something besides its request, asked of the same authorizers (http/resources.ts
 * binds the caller to the authorizers set up at start).
 */
export type AuthorizeOther = (attrs: Omit<Attributes, 'user'>) => Promise<Decision>;

/** Who asks, for admitCreate; both unset for the server's own writes. */
export interface Caller {
  user?: UserInfo;
  authorize?: AuthorizeOther;
}

/** The answer of a SubjectAccessReview, as far as the rules read it. */
export interface AccessReview {
  allowed: boolean;
  denied: boolean;
  reason: string;
}

/**
 * A Kubernetes cluster the server reaches, as the rules ask it something (HostCluster has it): whether a user may do
 * something there. Throws when the cluster cannot answer.
 */
export interface ReviewingCluster {
  subjectAccessReview(attrs: Attributes): Promise<AccessReview>;
}

/** A connected cluster as the rules use it: which physical cluster it is, and what it answers. */
export interface ConnectedCluster {
  /** The uid of its kube-system Namespace: the same for every Cluster that reaches this physical cluster. */
  kubeSystemUid: string;
  api: ReviewingCluster;
}

/**
 * The connection of the Cluster `name` when it is Initialized; else throws a StatusError (503) naming the Cluster's
 * reason (clusters/connections.ts).
 */
export type ConnectCluster = (name: string) => Promise<ConnectedCluster>;

/** What admitCreate may read and ask besides the caller. */
export interface AdmitContext {
  /** The other stores: `store(Project)`. */
  store: StoreLookup;
  /** The connected clusters. */
  connectCluster: ConnectCluster;
}

/** Who holds a claim (the object of the kind that was created with it). */
export interface ClaimHolderRef {
  namespace?: string;
  name: string;
}

/** A Table column type (metav1.TableColumnDefinition.type). */
export type PrinterColumnType = 'integer' | 'number' | 'string' | 'boolean' | 'date';

/**
 * A printer column computed in code, for what a CRD JSONPath cannot say (counts, derived states). It joins
 * the CRD's additionalPrinterColumns in `kubectl get` Tables.
 */
export interface ComputedPrinterColumn<O extends KubeObject = KubeObject> {
  name: string;
  type: PrinterColumnType;
  /** OpenAPI format hint, e.g. "name"; "" when absent. */
  format?: string;
  description: string;
  /** 0 (default) shows always; > 0 only with `-o wide`. */
  priority?: number;
  /**
   * Placed before the column of this name; defaults to "Age". Appended after the CRD's columns when no
   * column has that name.
   */
  before?: string;
  /**
   * The cell's value. It is converted like a JSONPath result of the column's type: integer truncated,
   * date (an RFC 3339 string) shown as an age, null/undefined or a value of another type shown as <none>. `now` is
   * the time the Table is made at (ms since the epoch), one for all its rows.
   */
  cell(obj: O, now: number): unknown;
}

/**
 * A kind's checks of a write against other objects (as sample-apiserver's admission plugins, given the stores to
 * read), each in src/kinds/<kind>/admission.ts. The store runs them after the kind's validation, before the
 * admission chain's validating plugins and webhooks.
 */
export interface KindAdmission<O extends KubeObject = KubeObject> {
  /**
   * Checks of a new, validated object against other objects, knowing who asks and able to ask what else the caller
   * may do (as kube's validating admission runs after the strategy's validation). Runs on every create: POST, a
   * server-side apply that creates, dry run. Throws a StatusError to refuse. It may record on `obj` what it learned
   * elsewhere that the kind's claims are computed from, in fields no client sets (e.g. the physical cluster an
   * instance's Cluster reaches, in its status).
   */
  admitCreate?(obj: O, caller: Caller, context: AdmitContext): Promise<void>;
  /**
   * The same for an update of the main resource (PUT, PATCH of every type, a server-side apply that updates, dry run
   * too), after its validation; `old` is the object as stored. Throws a StatusError to refuse.
   */
  admitUpdate?(obj: O, old: O, caller: Caller, context: AdmitContext): Promise<void>;
}

/**
 * What a kind does to a new object, in the order the store runs it (kube's RESTCreateStrategy, as far as the kinds use
 * it): prepare, then validate, then warn; `createResponse` shapes the answer.
 */
export interface CreateStrategy<O extends KubeObject = KubeObject> {
  /**
   * Fills in what the kind decides for a new object before it is validated (defaults, generated values),
   * knowing who asks. May throw a StatusError (e.g. 403 for something this caller may not ask for).
   */
  prepareForCreate?(obj: O, user: UserInfo | undefined): void;
  /** Extra validation of a new object; runs after its schema and metadata validated cleanly. */
  validate?(obj: O): FieldError[];
  /**
   * Warnings about a valid new object, for the client (`Warning: 299` headers), as kube's WarningsOnCreate: for what
   * is allowed but most likely a mistake.
   */
  warningsOnCreate?(obj: O): string[];
  /** The answer to a create, from what clients see of the stored object and the prepared one (e.g. to show a generated key once). */
  createResponse?(shown: O, prepared: O): O;
}

/** The same for an update of the main resource (kube's RESTUpdateStrategy): PUT, PATCH of every type, apply. */
export interface UpdateStrategy<O extends KubeObject = KubeObject> {
  /** Fills in what the kind decides, as prepareForCreate does; `old` is the object as stored. */
  prepareForUpdate?(obj: O, old: O, user: UserInfo | undefined): void;
  /** Extra validation of an update, of the status subresource's too; defaults to `validate` of the new object. */
  validateUpdate?(obj: O, old: O): FieldError[];
  /** Warnings about a valid update, as warningsOnCreate. */
  warningsOnUpdate?(obj: O, old: O): string[];
}

/**
 * A write of the status subresource (every verb: PUT, PATCH, apply; dry run too), which is its own update, as kube's
 * status strategy is (apiextensions-apiserver status_strategy.go): validated as an update of the kind, never warned
 * about, no kind admission.
 */
export interface StatusStrategy<O extends KubeObject = KubeObject> {
  /** The kind's preparation of the new object, as prepareForUpdate's; `old` is the object as stored. */
  prepareForStatusUpdate?(obj: O, old: O, user: UserInfo | undefined): void;
}

/** What a kind says of a DELETE (kube's RESTDeleteStrategy, as far as the kinds use it). */
export interface DeleteStrategy<O extends KubeObject = KubeObject> {
  /** Warnings, from the object as stored: what the deletion does beyond the object itself. */
  warningsOnDelete?(obj: O): string[];
}

/** How a kind's objects are stored and shown: what of them is kept as written, stored otherwise, or never shown. */
export interface StoredForm<O extends KubeObject = KubeObject> {
  /**
   * The parts of the kind that restrict access (an access key's scope, an object's access list): an unknown or
   * duplicate field there is refused whatever fieldValidation says, and what is stored there is never pruned
   * (decoding.ts RestrictingFields).
   */
  restrictingFields?: readonly FieldPath[];
  /** The stored form of a validated object (e.g. a secret replaced by its hash); default: the object itself. */
  toStorage?(obj: O): O;
  /**
   * Fields no client ever sees (e.g. a secret's hash): left out of every answer and watch event and of what
   * patches and applies act on, and carried over from the stored object by every update (see hiddenfields.ts).
   */
  hiddenFields?: readonly FieldPath[];
  /**
   * What clients see of an object besides what is stored, derived at read time from it and the time (readview.ts),
   * made once per store from the server's settings; none when the settings turn it off.
   */
  readView?(settings: KindSettings): ReadView<O> | undefined;
  /** The kind's strategy as the server's settings make it (limits its writes are held to); itself when absent. */
  withSettings?(settings: KindSettings): Strategy<O>;
}

/** A kind's columns in `kubectl get` Tables, besides its CRD's. */
export interface TableColumns<O extends KubeObject = KubeObject> {
  /** Extra Table columns, merged into the CRD's printer columns (see http/table.ts). */
  printerColumns?: readonly ComputedPrinterColumn<O>[];
}

/**
 * What an object of the kind holds alone (e.g. the one virtual cluster an instance manages), as names unique among
 * the kind's claims, computed from fields fixed at create. Storage keeps each claim beside the object, written in the
 * transaction that creates it and deleted in the one that deletes it (storage/interface.ts ClaimHolder), so two
 * creates never both hold one, whatever checks ran before.
 */
export interface Claims<O extends KubeObject = KubeObject> {
  of(obj: O): string[];
  /** The error (a 409) for a create of `obj` when `holder` holds one of its claims; `user` is who asks. */
  taken(obj: O, holder: ClaimHolderRef, user: UserInfo | undefined): Error;
}

/**
 * Declared by a kind whose objects carry `spec.owner` and `spec.access` (src/access); `hostRbac` when the access sync
 * makes them Roles and bindings in the host cluster, which the Helm chart must then let the server grant.
 */
export interface OwnerAccess {
  hostRbac: boolean;
}

/**
 * The rules of a kind whose objects are `O` (its generated type, src/kinds/<kind>/types.ts): each of the small
 * strategies above, and what it declares besides. The store takes each part for its own steps (store.ts).
 */
export interface Strategy<O extends KubeObject = KubeObject>
  extends CreateStrategy<O>, UpdateStrategy<O>, StatusStrategy<O>, DeleteStrategy<O>, StoredForm<O>, TableColumns<O> {
  access?: OwnerAccess;
  /** The kind's admission plugin: its checks against other objects, run after its validation. */
  admission?: KindAdmission<O>;
  claims?: Claims<O>;
}
