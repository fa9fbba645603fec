/** A ProjectSecret's reference to a SharedSecret, who set it, and the read of the SharedSecret that naming it is. */
import type { Attributes } from '../../apimachinery/authorizer.js';
import { GROUP_NAME } from '../../apimachinery/group.js';
import { recordedUser, type RecordedUser } from '../../registry/recordeduser.js';
import type { ProjectSecret } from './types.js';

const VERSION = 'v1';

/** A ProjectSecret's `spec.sharedSecretRef`, as the sync reads it. */
export interface SharedSecretRef {
  namespace: string;
  name: string;
  /** The keys to copy; none (undefined or empty) means all. */
  keys?: string[];
}

/** The reference of a ProjectSecret, or undefined when it holds its own data. */
export function sharedSecretRef(obj: ProjectSecret): SharedSecretRef | undefined {
  const r = obj.spec?.sharedSecretRef;
  return r && typeof r === 'object' && !Array.isArray(r) ? (r as SharedSecretRef) : undefined;
}

/** Who set the reference (status.referencedBy); undefined when nobody is recorded. */
export const referenceWriter = (obj: ProjectSecret): RecordedUser | undefined => recordedUser(obj.status?.referencedBy);

/** Who last set or changed the delivery targets (status.targetedBy); undefined when nobody is recorded. */
export const targetsWriter = (obj: ProjectSecret): RecordedUser | undefined => recordedUser(obj.status?.targetedBy);

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
