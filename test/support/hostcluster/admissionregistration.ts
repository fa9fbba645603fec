/**
 * admissionregistration.k8s.io/v1 objects in the stand-in (webhook configurations, validating admission policies
 * and their bindings): a test puts and removes them (each write a new resourceVersion and a watch event); the server
 * lists, gets and watches them.
 */
import { ClusterScopedObjects } from './clusterscoped.js';
import type { ResourceVersions } from './objects.js';
import type { WatchHub } from './watch.js';

export const ADMISSION_RESOURCES = [
  'mutatingwebhookconfigurations',
  'validatingwebhookconfigurations',
  'validatingadmissionpolicies',
  'validatingadmissionpolicybindings',
] as const;
export type AdmissionResource = (typeof ADMISSION_RESOURCES)[number];

export class AdmissionRegistration extends ClusterScopedObjects<AdmissionResource> {
  constructor(rv: ResourceVersions, watches: WatchHub) {
    super(rv, watches, 'admissionregistration.k8s.io', {
      mutatingwebhookconfigurations: 'MutatingWebhookConfiguration',
      validatingwebhookconfigurations: 'ValidatingWebhookConfiguration',
      validatingadmissionpolicies: 'ValidatingAdmissionPolicy',
      validatingadmissionpolicybindings: 'ValidatingAdmissionPolicyBinding',
    });
  }
}
