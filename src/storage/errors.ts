/**
 * Storage failures as the Kubernetes Status a client sees (kube's storage/errors.go and etcd3/errors.go:
 * InterpretGetError, InterpretUpdateError, interpretListError): the one table from StorageError to HTTP answer.
 */
import { encodeContinue } from '../apimachinery/continue.js';
import * as errors from '../apimachinery/status.js';
import type { GroupResource } from '../apimachinery/types.js';
import { StorageError } from './interface.js';

export interface StorageErrorContext {
  groupResource: GroupResource;
  /** The object's name; '' for lists and watches. */
  name: string;
  /** What was being done (get, list, update, ...), for a ServerTimeout's message. */
  operation: string;
  /**
   * A list continued from this key (relative to the listed prefix): when its revision was compacted, the 410 carries
   * a token that continues from there at the current revision (kube's handleCompactedErrorForPaging).
   */
  continueFrom?: string;
}

/** `err` as a Status when it is a StorageError; any other error is returned unchanged. */
export function interpretStorageError(err: unknown, ctx: StorageErrorContext): unknown {
  if (!(err instanceof StorageError)) return err;
  switch (err.code) {
    case 'KeyNotFound':
      return errors.notFound(ctx.groupResource, ctx.name);
    case 'KeyExists':
      return errors.alreadyExists(ctx.groupResource, ctx.name);
    case 'TooLarge':
      // Not worth a retry: the object itself is too big (kubernetes/kubernetes#112152 asks the same of kube).
      return errors.requestEntityTooLarge(
        'the object is larger than etcd accepts in one request (its --max-request-bytes, 1.5 MiB by default)',
      );
    case 'Compacted': {
      if (ctx.continueFrom === undefined)
        return errors.expired('The resourceVersion for the provided list is too old.');
      const status = errors.expiredContinue();
      status.status.metadata.continue = encodeContinue(-1, ctx.continueFrom);
      return status;
    }
    case 'FutureRevision':
      return errors.resourceVersionTooLarge(err.revisions?.requested ?? 0, err.revisions?.current ?? 0);
    case 'Internal':
      // The stored value cannot be decrypted (or encrypted): the message names the key, never the data.
      return errors.internalError(err);
    case 'Unreachable':
      return errors.serverTimeout(ctx.groupResource, ctx.operation);
    case 'InvalidObj':
      // As kube's InterpretUpdateError and InterpretDeleteError: preconditions that do not hold are a conflict.
      return errors.conflict(ctx.groupResource, ctx.name, err.message);
    case 'ClaimTaken':
      // The store says which (its kind's strategy words it); this is the fallback.
      return errors.conflict(ctx.groupResource, ctx.name, 'another object holds what this one claims');
  }
}
