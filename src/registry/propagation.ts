/**
 * What a DELETE does to the garbage-collection finalizers (kube's deletionFinalizersForGarbageCollection in
 * registry/generic/registry/store.go): an explicit policy wins, else the finalizers already on the object keep
 * their meaning, else our kinds default to Background (as CRDs do), which needs no finalizer.
 */
import { FINALIZER_DELETE_DEPENDENTS, FINALIZER_ORPHAN_DEPENDENTS } from '../apimachinery/objectmeta.js';

export type PropagationPolicy = 'Orphan' | 'Background' | 'Foreground';

export interface PropagationOptions {
  propagationPolicy?: PropagationPolicy;
  /** The deprecated form: true is Orphan, false is Background. */
  orphanDependents?: boolean;
}

/** The finalizers an object has after a DELETE with these options (the same array when nothing changes). */
export function finalizersAfterDelete(finalizers: string[] | undefined, opts: PropagationOptions): string[] {
  const current = finalizers ?? [];
  const policy = effectivePolicy(current, opts);
  const next = current.filter((f) => f !== FINALIZER_ORPHAN_DEPENDENTS && f !== FINALIZER_DELETE_DEPENDENTS);
  if (policy === 'Orphan') next.push(FINALIZER_ORPHAN_DEPENDENTS);
  if (policy === 'Foreground') next.push(FINALIZER_DELETE_DEPENDENTS);
  const same = next.length === current.length && next.every((f) => current.includes(f));
  return same ? current : next;
}

function effectivePolicy(finalizers: string[], opts: PropagationOptions): PropagationPolicy {
  if (opts.orphanDependents !== undefined) return opts.orphanDependents ? 'Orphan' : 'Background';
  if (opts.propagationPolicy) return opts.propagationPolicy;
  for (const f of finalizers) {
    if (f === FINALIZER_ORPHAN_DEPENDENTS) return 'Orphan';
    if (f === FINALIZER_DELETE_DEPENDENTS) return 'Foreground';
  }
  return 'Background';
}
