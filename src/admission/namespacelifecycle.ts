/**
 * NamespaceLifecycle, as k8s.io/apiserver's plugin: no write but a delete into a namespace the host cluster does
 * not have (404 `namespaces "x" not found`), and no create into one being terminated (403, with kube's
 * NamespaceTerminating cause). Namespaces come from an informer on the host; a namespace the informer has not
 * seen is looked up live (after kube's 50 ms wait for a create), since it may have been created a moment ago.
 */
import { ADMISSION_READY_TIMEOUT_MS, admissionForbidden, type AdmissionAttributes } from '../apimachinery/admission.js';
import * as errors from '../apimachinery/status.js';
import type { HostObject } from '../host/informer.js';
import type { AdmissionPlugin } from './plugin.js';

export const NAMESPACE_LIFECYCLE = 'NamespaceLifecycle';

export interface Namespace extends HostObject {
  status?: { phase?: string };
}

/** Where the plugin finds namespaces: the informer's copy, and the host itself. */
export interface NamespaceSource {
  /** Resolves false when the informer has not listed once within `timeoutMs`. */
  waitForSync(timeoutMs: number): Promise<boolean>;
  cached(name: string): Namespace | undefined;
  /** The host's answer now; undefined when it has no such namespace. */
  live(name: string): Promise<Namespace | undefined>;
}

/** kube's missingNamespaceWait: time for the informer to see a namespace created just before. */
const MISSING_NAMESPACE_WAIT_MS = 50;

export function namespaceLifecycle(namespaces: NamespaceSource): AdmissionPlugin {
  return {
    name: NAMESPACE_LIFECYCLE,
    operations: ['CREATE', 'UPDATE', 'DELETE'],
    async admit(attrs: AdmissionAttributes): Promise<void> {
      // Cluster-scoped objects, and deletes, are always let through.
      if (!attrs.namespace || attrs.operation === 'DELETE') return;
      if (!(await namespaces.waitForSync(ADMISSION_READY_TIMEOUT_MS)))
        throw admissionForbidden(attrs, 'not yet ready to handle request');
      let namespace = namespaces.cached(attrs.namespace);
      if (!namespace && attrs.operation === 'CREATE') {
        await new Promise((resolve) => setTimeout(resolve, MISSING_NAMESPACE_WAIT_MS));
        namespace = namespaces.cached(attrs.namespace);
      }
      if (!namespace) {
        try {
          namespace = await namespaces.live(attrs.namespace);
        } catch (err) {
          throw errors.internalError(err);
        }
        if (!namespace) throw errors.notFound({ group: '', resource: 'namespaces' }, attrs.namespace);
      }
      if (attrs.operation === 'CREATE' && namespace.status?.phase === 'Terminating') {
        const err = admissionForbidden(
          attrs,
          `unable to create new content in namespace ${attrs.namespace} because it is being terminated`,
        );
        err.status.details = {
          ...err.status.details,
          causes: [
            {
              reason: 'NamespaceTerminating',
              message: `namespace ${attrs.namespace} is being terminated`,
              field: 'metadata.namespace',
            },
          ],
        };
        throw err;
      }
    },
  };
}
