/**
 * What label and field selectors read of an object (kube's storage.AttrFunc: labels and the selectable fields),
 * kept beside an object held in its JSON form, so that selecting among many objects decodes none of them.
 */
import type { KubeObject } from './types.js';

export interface SelectionAttributes {
  readonly labels?: Readonly<Record<string, string>>;
  readonly name: string;
  readonly namespace: string;
}

/** The attributes of a decoded object (or of a stored value that may be anything: attacker-written). */
export function selectionAttributes(obj: unknown): SelectionAttributes {
  const metadata = (obj as Partial<KubeObject> | null)?.metadata;
  const labels = metadata?.labels;
  return {
    labels: typeof labels === 'object' && labels !== null && !Array.isArray(labels) ? labels : undefined,
    name: typeof metadata?.name === 'string' ? metadata.name : '',
    namespace: typeof metadata?.namespace === 'string' ? metadata.namespace : '',
  };
}
