/**
 * The shape an answer takes (negotiated from Accept): the objects themselves, PartialObjectMetadata(List), or
 * a meta.k8s.io Table built from the kind's printer columns.
 */
import type { KubeList, KubeObject } from '../apimachinery/types.js';
import type { ResourceDefinition } from '../registry/definitions.js';
import type { Strategy } from '../registry/strategy.js';
import type { Target } from './negotiation.js';
import type { WatchEncoder } from './watch.js';

export interface Shaper {
  object(obj: KubeObject): unknown;
  list(list: KubeList): unknown;
  /** A fresh encoder per watch stream (a Table stream sends column definitions once). */
  watch(): WatchEncoder;
}

export function shaper(target: Target, def: ResourceDefinition, _strategy: Strategy): Shaper {
  const plainBookmark = (resourceVersion: string, annotations?: Record<string, string>) => ({
    kind: def.kind,
    apiVersion: def.apiVersion,
    metadata: { resourceVersion, ...(annotations ? { annotations } : {}) },
  });
  return {
    object: (obj) => obj,
    list: (list) => list,
    watch: () => ({ event: (obj) => obj, bookmark: plainBookmark }),
  };
}
