/**
 * `meta.k8s.io` Tables (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, or v1beta1, which differs only
 * in apiVersion) and PartialObjectMetadata, as kube-apiserver 1.33 serves them for custom resources:
 *
 * - columns (apiextensions-apiserver tableconvertor.New): the Name column, then the CRD's
 *   additionalPrinterColumns (an Age column when the CRD has none), with a strategy's computed columns
 *   placed before the column they name (default "Age");
 * - cells (tableconvertor.ConvertToTable / cellForJSONValue): the JSONPath value converted by column type,
 *   a missing value null (kubectl prints `<none>`), dates as an age (duration.HumanDuration) relative to `now`;
 * - rows[].object (apiserver handlers/response.go asTable): per includeObject, a PartialObjectMetadata
 *   (default), the whole object, or null;
 * - metadata: resourceVersion, continue and remainingItemCount of the list, or the object's resourceVersion.
 *
 * The JSONPath evaluator and the text of its results are apimachinery/jsonpath.ts; Go's time and number formats
 * are apimachinery/golang/.
 */
import { decoded, type ListItem } from '../apimachinery/encoded.js';
import { humanDuration } from '../apimachinery/duration.js';
import { goTimeMillis, parseRFC3339 } from '../apimachinery/golang/time.js';
import { compileJSONPath, jsonPathText } from '../apimachinery/jsonpath.js';
import { badRequest } from '../apimachinery/status.js';
import type { KubeObject, ListMeta, ObjectMeta } from '../apimachinery/types.js';
import { goQuote } from '../apimachinery/golang/strconv.js';
import type { PrinterColumn, ResourceDefinition } from '../registry/definitions.js';
import type { ComputedPrinterColumn, TableColumns } from '../registry/strategy.js';

export type TableVersion = 'v1' | 'v1beta1';
export type IncludeObject = 'None' | 'Metadata' | 'Object';
export type MetaAPIVersion = `meta.k8s.io/${TableVersion}`;

export interface TableColumnDefinition {
  name: string;
  type: string;
  format: string;
  description: string;
  priority: number;
}

export interface TableRow {
  cells: unknown[];
  /** PartialObjectMetadata (includeObject=Metadata), the object (Object), or null (None). */
  object: unknown;
}

export interface Table {
  kind: 'Table';
  apiVersion: MetaAPIVersion;
  metadata: ListMeta;
  /** null in the watch events after the first, as kube sends them. */
  columnDefinitions: TableColumnDefinition[] | null;
  rows: TableRow[];
}

export interface PartialObjectMetadata {
  kind: 'PartialObjectMetadata';
  apiVersion: MetaAPIVersion;
  metadata: ObjectMeta;
}

export interface PartialObjectMetadataList {
  kind: 'PartialObjectMetadataList';
  apiVersion: MetaAPIVersion;
  metadata: ListMeta;
  items: PartialObjectMetadata[];
}

export interface TableOptions {
  /** The Table's group version: v1 (default) or v1beta1. Row PartialObjectMetadata use the same. */
  version?: TableVersion;
  /** Default Metadata. Parse the query parameter with `parseIncludeObject`. */
  includeObject?: IncludeObject;
  /** The moment ages are computed against; default the current time. */
  now?: Date | number;
}

/** ObjectMeta swagger docs (apimachinery meta/v1 types_swagger_doc_generated.go), used for the column descriptions. */
export const NAME_DESCRIPTION =
  'Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names';
export const CREATION_TIMESTAMP_DESCRIPTION =
  'CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata';

// ---------------------------------------------------------------------------------------------
// includeObject
// ---------------------------------------------------------------------------------------------

/**
 * The `includeObject` query parameter (first value when repeated): '' or absent means Metadata. Anything
 * but None, Metadata and Object is a 400, as validation.ValidateTableOptions words it:
 * `Unable to convert to Table as requested: includeObject: Invalid value: "x": must be 'Metadata', 'Object', 'None', or empty`.
 */
export function parseIncludeObject(value: string | readonly string[] | null | undefined): IncludeObject {
  const raw = Array.isArray(value) ? (value[0] ?? '') : ((value as string | null | undefined) ?? '');
  switch (raw) {
    case '':
      return 'Metadata';
    case 'None':
    case 'Metadata':
    case 'Object':
      return raw;
    default:
      throw badRequest(
        `Unable to convert to Table as requested: includeObject: Invalid value: ${goQuote(raw)}: must be 'Metadata', 'Object', 'None', or empty`,
      );
  }
}

// ---------------------------------------------------------------------------------------------
// PartialObjectMetadata
// ---------------------------------------------------------------------------------------------

/** meta.AsPartialObjectMetadata: all of the object's metadata under kind PartialObjectMetadata. */
export function partialObjectMetadata(
  obj: Pick<KubeObject, 'metadata'>,
  version: TableVersion = 'v1',
): PartialObjectMetadata {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: { ...obj.metadata } };
}

/** A list as PartialObjectMetadataList: the list metadata and each item's metadata; `items` always an array. */
export function partialObjectMetadataList(
  list: { metadata?: ListMeta; items?: readonly ListItem[] | null },
  version: TableVersion = 'v1',
): PartialObjectMetadataList {
  const { frame, item } = partialObjectMetadataListParts(list, version);
  return { ...frame, items: (list.items ?? []).map(item) };
}

/** partialObjectMetadataList in parts: the list without items, and what makes each item's (listanswer.ts). */
export function partialObjectMetadataListParts(
  list: { metadata?: ListMeta },
  version: TableVersion = 'v1',
): { frame: PartialObjectMetadataList; item: (item: ListItem) => PartialObjectMetadata } {
  return {
    frame: {
      kind: 'PartialObjectMetadataList',
      apiVersion: `meta.k8s.io/${version}`,
      metadata: listMeta(list.metadata),
      items: [],
    },
    item: (item) => partialObjectMetadata(decoded(item), version),
  };
}

function listMeta(meta: ListMeta | undefined): ListMeta {
  const out: ListMeta = {};
  if (meta?.resourceVersion) out.resourceVersion = meta.resourceVersion;
  if (meta?.continue) out.continue = meta.continue;
  if (meta?.remainingItemCount !== undefined && meta.remainingItemCount !== null)
    out.remainingItemCount = meta.remainingItemCount;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Cells (tableconvertor.go)
// ---------------------------------------------------------------------------------------------

/** cellForJSONValue, plus the string case ConvertToTable handles with the JSONPath printer. */
function cellFor(type: string, found: boolean, value: unknown, now: number): unknown {
  if (!found || value === undefined) return null;
  if (type === 'string') return jsonPathText(value);
  if (value === null) return null;
  switch (type) {
    case 'integer':
      return typeof value === 'number' ? Math.trunc(value) : null;
    case 'number':
      return typeof value === 'number' ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'date': {
      if (typeof value !== 'string') return null;
      // metav1.Time.UnmarshalQueryParameter: "" and "null" are the zero time, shown as <unknown>.
      if (value === '' || value === 'null') return '<unknown>';
      const t = parseRFC3339(value);
      return t === undefined ? '<invalid>' : humanDuration(now - goTimeMillis(t));
    }
    default:
      return null;
  }
}

// ---------------------------------------------------------------------------------------------
// The convertor
// ---------------------------------------------------------------------------------------------

interface Column {
  definition: TableColumnDefinition;
  /** Its value in `obj` when read at `now` (ms since the epoch). */
  value(obj: KubeObject, now: number): { found: boolean; value?: unknown };
}

/** serveDefaultColumnsIfEmpty: a CRD without printer columns gets an Age column. */
const DEFAULT_COLUMNS: readonly PrinterColumn[] = [
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: CREATION_TIMESTAMP_DESCRIPTION },
];

function crdColumn(col: PrinterColumn): Column {
  const evaluate = compileJSONPath(col.jsonPath);
  return {
    definition: {
      name: col.name,
      type: col.type,
      format: col.format ?? '',
      description: col.description || `Custom resource definition column (in JSONPath format): ${col.jsonPath}`,
      priority: col.priority ?? 0,
    },
    value: (obj) => evaluate(obj),
  };
}

function computedColumn(col: ComputedPrinterColumn): Column {
  return {
    definition: {
      name: col.name,
      type: col.type,
      format: col.format ?? '',
      description: col.description,
      priority: col.priority ?? 0,
    },
    value: (obj, now) => {
      const value = col.cell(obj, now);
      return value === undefined ? { found: false } : { found: true, value };
    },
  };
}

function nowMillis(now: Date | number | undefined): number {
  if (now === undefined) return Date.now();
  return typeof now === 'number' ? now : now.getTime();
}

/**
 * Builds Tables for one resource definition. Construct once per kind (columns and JSONPaths are compiled
 * up front) and reuse for every request.
 */
export class TableConvertor {
  private readonly columns: readonly Column[];
  /** The column definitions every Table of this kind carries. */
  readonly columnDefinitions: readonly TableColumnDefinition[];

  private readonly typeMeta: { apiVersion?: string; kind?: string };

  constructor(
    def: Pick<ResourceDefinition, 'printerColumns'> & Partial<Pick<ResourceDefinition, 'apiVersion' | 'kind'>>,
    strategy?: TableColumns,
  ) {
    this.typeMeta = { apiVersion: def.apiVersion, kind: def.kind };
    const crd = (def.printerColumns.length ? def.printerColumns : DEFAULT_COLUMNS).map(crdColumn);
    for (const col of strategy?.printerColumns ?? []) {
      const before = col.before ?? 'Age';
      const at = crd.findIndex((c) => c.definition.name === before);
      crd.splice(at < 0 ? crd.length : at, 0, computedColumn(col));
    }
    const name: Column = {
      definition: { name: 'Name', type: 'string', format: 'name', description: NAME_DESCRIPTION, priority: 0 },
      value: (obj) => ({ found: true, value: obj.metadata?.name ?? '' }),
    };
    this.columns = [name, ...crd];
    this.columnDefinitions = this.columns.map((c) => c.definition);
  }

  /** The cells of one object's row. */
  cells(obj: KubeObject, now?: Date | number): unknown[] {
    const at = nowMillis(now);
    return this.columns.map((col, i) => {
      if (i === 0) return obj.metadata?.name ?? '';
      const { found, value } = col.value(obj, at);
      return cellFor(col.definition.type, found, value, at);
    });
  }

  /** One row: the cells and the object as includeObject asks. */
  row(obj: KubeObject, options: TableOptions = {}): TableRow {
    return { cells: this.cells(obj, options.now), object: this.rowObject(obj, options) };
  }

  /** A Table of a list: one row per item, the list's resourceVersion, continue and remainingItemCount. */
  listTable(list: { metadata: ListMeta; items: readonly ListItem[] }, options: TableOptions = {}): Table {
    const { frame, row } = this.listTableParts(list, options);
    return { ...frame, rows: (list.items ?? []).map(row) };
  }

  /** listTable in parts: the Table without rows, and what makes each item's row (listanswer.ts); one `now` for all. */
  listTableParts(
    list: { metadata: ListMeta },
    options: TableOptions = {},
  ): { frame: Table; row: (item: ListItem) => TableRow } {
    const rowOptions = { ...options, now: nowMillis(options.now) };
    return {
      frame: this.table(listMeta(list.metadata), [], options, true),
      row: (item) => this.row(decoded(item), rowOptions),
    };
  }

  /** A one-row Table of a single object (GET of one object); metadata.resourceVersion is the object's. */
  objectTable(obj: KubeObject, options: TableOptions = {}): Table {
    return this.table(objectMeta(obj), [this.row(obj, options)], options, true);
  }

  /**
   * The Table a watch event carries: one row for the event's object. Only the first event of a watch has
   * columnDefinitions; later ones send `"columnDefinitions": null`.
   */
  watchEventTable(obj: KubeObject, first: boolean, options: TableOptions = {}): Table {
    return this.table(objectMeta(obj), [this.row(obj, options)], options, first);
  }

  /** includeObject: None → null, Object → the object (apiVersion and kind filled in), else PartialObjectMetadata. */
  private rowObject(obj: KubeObject, options: TableOptions): unknown {
    switch (options.includeObject ?? 'Metadata') {
      case 'None':
        return null;
      case 'Object':
        if (obj.apiVersion && obj.kind) return obj;
        return { ...obj, apiVersion: obj.apiVersion || this.typeMeta.apiVersion, kind: obj.kind || this.typeMeta.kind };
      default:
        return partialObjectMetadata(obj, options.version ?? 'v1');
    }
  }

  private table(metadata: ListMeta, rows: TableRow[], options: TableOptions, headers: boolean): Table {
    return {
      kind: 'Table',
      apiVersion: `meta.k8s.io/${options.version ?? 'v1'}`,
      metadata,
      columnDefinitions: headers ? this.columnDefinitions.map((c) => ({ ...c })) : null,
      rows,
    };
  }
}

function objectMeta(obj: KubeObject): ListMeta {
  return obj.metadata?.resourceVersion ? { resourceVersion: obj.metadata.resourceVersion } : {};
}
