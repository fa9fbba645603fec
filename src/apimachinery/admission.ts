/**
 * What admission is asked about a write (k8s.io/apiserver's admission.Attributes), and the chain every write of a
 * store goes through: mutating plugins before the kind's own defaulting and validation, validating plugins after
 * it and before storage, as kube's handlers and generic registry call them.
 */
import { forbidden, type StatusError } from './status.js';
import type { GroupResource, KubeObject } from './types.js';
import type { UserInfo } from './user.js';

export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface AdmissionAttributes {
  operation: AdmissionOperation;
  group: string;
  version: string;
  kind: string;
  /** The resource (plural) and subresource ('' for the object itself) the request names. */
  resource: string;
  subresource: string;
  /** '' for cluster-scoped objects. */
  namespace: string;
  /** '' when not known yet (a create with generateName). */
  name: string;
  /** The object as written (mutating plugins may change it); absent for DELETE. */
  object?: KubeObject;
  /** The stored object (UPDATE, DELETE). */
  oldObject?: KubeObject;
  user: UserInfo;
  dryRun: boolean;
  /** Warnings for the client (webhooks' and policies'), sent as `Warning: 299` headers. */
  warnings: string[];
  /** Annotations for the request's audit event (kube's Attributes.AddAnnotation); a key set once keeps its value. */
  auditAnnotations: Record<string, string>;
}

export interface Admission {
  /** Mutating plugins, in order; a refusal is thrown as a StatusError. */
  admit(attrs: AdmissionAttributes): Promise<void>;
  /** Validating plugins; they change nothing. */
  validate(attrs: AdmissionAttributes): Promise<void>;
}

/** The user of the server's own writes (kube's loopback client: user.APIServerUser in system:masters). */
export const SERVER_USER: UserInfo = { name: 'system:apiserver', groups: ['system:authenticated', 'system:masters'] };

export function groupResourceOf(attrs: AdmissionAttributes): GroupResource {
  return { group: attrs.group, resource: attrs.resource };
}

/** admission.NewForbidden: the request's resource, and its name (the object's, for a create). */
export function admissionForbidden(attrs: AdmissionAttributes, why: string): StatusError {
  return forbidden(groupResourceOf(attrs), attrs.name || attrs.object?.metadata?.name || '', why);
}

/** kube's admission.Handler WaitForReady: how long a plugin waits for its informers before refusing. */
export const ADMISSION_READY_TIMEOUT_MS = 10_000;
