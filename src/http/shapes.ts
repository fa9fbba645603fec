/**
 * The shape an answer takes (negotiated from Accept): the objects themselves, PartialObjectMetadata(List) for
 * metadata clients (kube's garbage collector and namespace deleter), or a meta.k8s.io Table for kubectl get.
 */
import type { ListItem, ObjectList } from '../apimachinery/encoded.js';
import type { KubeObject } from '../apimachinery/types.js';
import type { ResourceDefinition } from '../registry/definitions.js';
import type { TableColumns } from '../registry/strategy.js';
import type { ListAnswer } from './listanswer.js';
import type { Target } from './negotiation.js';
import { parseIncludeObject, partialObjectMetadata, partialObjectMetadataListParts, TableConvertor } from './table.js';
import type { WatchEncoder } from './watch.js';

export interface Shaper {
  object(obj: KubeObject): unknown;
  /** In parts, its elements made as they are written (listanswer.ts). */
  list(list: ObjectList): ListAnswer;
  /** A fresh encoder per watch stream (a Table stream sends its column definitions once). */
  watch(): WatchEncoder;
}

/** Table convertors compile their columns once per kind. */
const convertors = new WeakMap<ResourceDefinition, TableConvertor>();

function convertorFor(def: ResourceDefinition, columns: TableColumns): TableConvertor {
  let convertor = convertors.get(def);
  if (!convertor) convertors.set(def, (convertor = new TableConvertor(def, columns)));
  return convertor;
}

function bookmarkMeta(resourceVersion: string, annotations?: Record<string, string>) {
  return { resourceVersion, ...(annotations ? { annotations } : {}) };
}

export function shaper(target: Target, def: ResourceDefinition, columns: TableColumns, query: URLSearchParams): Shaper {
  const version = target.version ?? 'v1';
  const meta = `meta.k8s.io/${version}`;
  switch (target.as) {
    case 'Table': {
      const convertor = convertorFor(def, columns);
      const opts = { version, includeObject: parseIncludeObject(query.getAll('includeObject')) };
      return {
        object: (obj) => convertor.objectTable(obj, opts),
        list: (list) => {
          const { frame, row } = convertor.listTableParts(list, opts);
          return { frame: { ...frame }, key: 'rows', sources: list.items, element: (item) => row(item as ListItem) };
        },
        watch: () => {
          let first = true;
          return {
            event: (obj) => {
              const table = convertor.watchEventTable(obj, first, opts);
              first = false;
              return table;
            },
            bookmark: (rv, annotations) => ({
              kind: 'Table',
              apiVersion: meta,
              metadata: bookmarkMeta(rv, annotations),
              columnDefinitions: null,
              rows: [],
            }),
          };
        },
      };
    }
    case 'PartialObjectMetadata':
    case 'PartialObjectMetadataList':
      return {
        object: (obj) => partialObjectMetadata(obj, version),
        list: (list) => {
          const { frame, item } = partialObjectMetadataListParts(list, version);
          return { frame: { ...frame }, key: 'items', sources: list.items, element: (i) => item(i as ListItem) };
        },
        watch: () => ({
          event: (obj) => partialObjectMetadata(obj, version),
          bookmark: (rv, annotations) => ({
            kind: 'PartialObjectMetadata',
            apiVersion: meta,
            metadata: bookmarkMeta(rv, annotations),
          }),
        }),
      };
    default:
      return {
        object: (obj) => obj,
        list: (list) => ({ frame: { ...list, items: [] }, key: 'items', sources: list.items, element: (item) => item }),
        watch: () => ({
          event: (obj) => obj,
          bookmark: (rv, annotations) => ({
            kind: def.kind,
            apiVersion: def.apiVersion,
            metadata: bookmarkMeta(rv, annotations),
          }),
        }),
      };
  }
}
