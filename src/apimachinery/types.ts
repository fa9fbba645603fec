/**
 * The shapes of Kubernetes objects as this server handles them (JSON, not Go types). The meta/v1 types are written
 * as data in openapi/metav1.ts; these interfaces follow them by hand, and test/unit/metav1.test.ts keeps the two in step.
 */

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  apiVersion?: string;
  time?: string;
  fieldsType?: string;
  fieldsV1?: unknown;
  subresource?: string;
}

export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  selfLink?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string | null;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: OwnerReference[];
  finalizers?: string[];
  managedFields?: ManagedFieldsEntry[];
}

/**
 * An object of a kind whose spec and status are `Spec` and `Status` (each kind's, generated from its CRD, in
 * src/kinds/<kind>/types.ts). Code that handles every kind alike leaves them `any`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export interface KubeObject<Spec = any, Status = any> {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: Spec;
  status?: Status;
  [field: string]: unknown;
}

/**
 * A kind as code names it, generated with its types from its CRD (src/kinds/<kind>/types.ts), typed by its objects:
 * `registry.store(ProjectSecret)` is a store of ProjectSecrets, and a renamed kind or plural does not compile.
 */
export interface KindRef<O extends KubeObject = KubeObject> {
  readonly apiVersion: string;
  readonly kind: string;
  readonly plural: string;
  /** Never set: it carries the type of the kind's objects. */
  readonly objectType?: O;
}

export interface ListMeta {
  selfLink?: string;
  resourceVersion?: string;
  continue?: string;
  remainingItemCount?: number;
}

export interface KubeList {
  apiVersion: string;
  kind: string;
  metadata: ListMeta;
  items: KubeObject[];
}

/** A resource within an API group, as Status details and messages name it ("sharedsecrets.management.platform.sh"). */
export interface GroupResource {
  group: string;
  resource: string;
}

export interface GroupKind {
  group: string;
  kind: string;
}

export function groupResourceString(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

export function groupKindString(gk: GroupKind): string {
  return gk.group ? `${gk.kind}.${gk.group}` : gk.kind;
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
