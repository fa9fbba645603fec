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
 */
import { badRequest } from '../apimachinery/status.js';
import type { KubeList, KubeObject, ListMeta, ObjectMeta } from '../apimachinery/types.js';
import { goQuote } from '../apimachinery/validation.js';
import type { PrinterColumn, ResourceDefinition } from '../registry/definitions.js';
import type { ComputedPrinterColumn, Strategy } from '../registry/strategy.js';

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
export function partialObjectMetadata(obj: Pick<KubeObject, 'metadata'>, version: TableVersion = 'v1'): PartialObjectMetadata {
  return { kind: 'PartialObjectMetadata', apiVersion: `meta.k8s.io/${version}`, metadata: { ...obj.metadata } };
}

/** A list as PartialObjectMetadataList: the list metadata and each item's metadata; `items` always an array. */
export function partialObjectMetadataList(
  list: { metadata?: ListMeta; items?: readonly KubeObject[] | null },
  version: TableVersion = 'v1',
): PartialObjectMetadataList {
  return {
    kind: 'PartialObjectMetadataList',
    apiVersion: `meta.k8s.io/${version}`,
    metadata: listMeta(list.metadata),
    items: (list.items ?? []).map((item) => partialObjectMetadata(item, version)),
  };
}

function listMeta(meta: ListMeta | undefined): ListMeta {
  const out: ListMeta = {};
  if (meta?.resourceVersion) out.resourceVersion = meta.resourceVersion;
  if (meta?.continue) out.continue = meta.continue;
  if (meta?.remainingItemCount !== undefined && meta.remainingItemCount !== null) out.remainingItemCount = meta.remainingItemCount;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Ages (apimachinery pkg/util/duration.HumanDuration)
// ---------------------------------------------------------------------------------------------

/**
 * duration.HumanDuration for a duration in milliseconds: "45s", "5m", "7m30s", "3h", "2h5m", "2d", "3d4h",
 * "400d", "2y30d", "9y"; "0s" for up to 2 seconds in the future, "<invalid>" beyond.
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.trunc(seconds / 60);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.trunc(minutes / 60);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.trunc(hours / 24) % 365;
    const y = Math.trunc(hours / 24 / 365);
    return dy === 0 ? `${y}y` : `${y}y${dy}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

/** time.Parse(time.RFC3339, s) as epoch milliseconds, or undefined when Go would refuse it. */
export function parseRFC3339(s: string): number | undefined {
  const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:Z|([+-])(\d{2}):(\d{2}))$/.exec(s);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  let offset = 0;
  if (m[8]) {
    const oh = Number(m[9]);
    const om = Number(m[10]);
    if (oh > 23 || om > 59) return undefined;
    offset = (m[8] === '-' ? -1 : 1) * (oh * 60 + om) * 60_000;
  }
  const fraction = m[7] ? Math.trunc(Number(`0${m[7]}`) * 1000) : 0;
  const utc = Date.UTC(year, month - 1, day, hour, minute, second, fraction);
  // Date.UTC maps years 0-99 to 1900-1999.
  const fixed = year < 100 ? new Date(utc).setUTCFullYear(year) : utc;
  return fixed - offset;
}

// ---------------------------------------------------------------------------------------------
// JSONPath (the simple paths CRD printer columns allow)
// ---------------------------------------------------------------------------------------------

type Step = { kind: 'field'; name: string } | { kind: 'index'; index: number };

/** A compiled JSONPath: `.a.b`, `.a[0].b`, `.a[-1]`, `.a['x.y']`, `.a["x"]`; found=false when any step is missing. */
export type JSONPathEvaluator = (obj: unknown) => { found: boolean; value?: unknown };

export function compileJSONPath(path: string): JSONPathEvaluator {
  const text = path.startsWith('{') && path.endsWith('}') ? path.slice(1, -1) : path;
  const steps: Step[] = [];
  let i = 0;
  const fail = (): never => {
    throw new Error(`unrecognized column definition ${JSON.stringify(path)}`);
  };
  while (i < text.length) {
    const c = text[i];
    if (c === '.') {
      let j = i + 1;
      while (j < text.length && text[j] !== '.' && text[j] !== '[') j++;
      const name = text.slice(i + 1, j);
      if (!name) {
        // a leading "." alone (the root) is allowed only as the whole path
        if (text.length === 1) break;
        fail();
      }
      steps.push({ kind: 'field', name });
      i = j;
    } else if (c === '[') {
      const close = text.indexOf(']', i);
      if (close < 0) fail();
      const inner = text.slice(i + 1, close).trim();
      const quoted = /^'(.*)'$|^"(.*)"$/.exec(inner);
      if (quoted) steps.push({ kind: 'field', name: quoted[1] ?? quoted[2] });
      else if (/^-?\d+$/.test(inner)) steps.push({ kind: 'index', index: Number(inner) });
      else fail();
      i = close + 1;
    } else {
      fail();
    }
  }
  return (obj: unknown) => {
    let cur: unknown = obj;
    for (const step of steps) {
      if (step.kind === 'field') {
        if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return { found: false };
        if (!Object.prototype.hasOwnProperty.call(cur, step.name)) return { found: false };
        cur = (cur as Record<string, unknown>)[step.name];
      } else {
        if (!Array.isArray(cur)) return { found: false };
        const index = step.index < 0 ? step.index + cur.length : step.index;
        if (index < 0 || index >= cur.length) return { found: false };
        cur = cur[index];
      }
    }
    return { found: true, value: cur };
  };
}

// ---------------------------------------------------------------------------------------------
// Cells (tableconvertor.go)
// ---------------------------------------------------------------------------------------------

const INT64_LIMIT = 2 ** 63;

/** fmt's %v of a float64: strconv 'g' with the shortest digits, so "1.5", "1e-05", "1.2345675e+06". */
function goFloat(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  if (v === 0) return Object.is(v, -0) ? '-0' : '0';
  // Shortest round-trip digits and the decimal exponent.
  const [mantissa, expText] = v.toExponential().split('e');
  const exp = Number(expText);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '').replace('.', '');
  const sign = negative ? '-' : '';
  // strconv 'g' with shortest precision switches to %e when exp < -4 || exp >= 6 (eprec 6).
  if (exp < -4 || exp >= 6) {
    const frac = digits.length > 1 ? `.${digits.slice(1)}` : '';
    const e = Math.abs(exp).toString().padStart(2, '0');
    return `${sign}${digits[0]}${frac}e${exp < 0 ? '-' : '+'}${e}`;
  }
  if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`;
  const intPart = digits.slice(0, exp + 1).padEnd(exp + 1, '0');
  const fracPart = digits.slice(exp + 1);
  return `${sign}${intPart}${fracPart ? `.${fracPart}` : ''}`;
}

/** encoding/json of an unstructured value: map keys sorted, HTML characters escaped. */
function goJSON(value: unknown): string {
  const sortKeys = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sortKeys);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const k of Object.keys(v).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))) {
        out[k] = sortKeys((v as Record<string, unknown>)[k]);
      }
      return out;
    }
    return v;
  };
  return JSON.stringify(sortKeys(value)).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The text a string column shows for a JSONPath result (jsonpath PrintResults of one value). */
function printValue(value: unknown): string {
  // An explicit null: jsonpath prints the invalid reflect.Value of a nil interface as "<no value>".
  if (value === null || value === undefined) return '<no value>';
  switch (typeof value) {
    case 'string':
      return value;
    case 'boolean':
      return String(value);
    case 'number':
      // Integers decode as int64 (printed in full), other numbers as float64 (printed with %v).
      return Number.isInteger(value) && Math.abs(value) < INT64_LIMIT ? value.toFixed(0) : goFloat(value);
    default:
      return goJSON(value);
  }
}

/** cellForJSONValue, plus the string case ConvertToTable handles with the JSONPath printer. */
function cellFor(type: string, found: boolean, value: unknown, now: number): unknown {
  if (!found || value === undefined) return null;
  if (type === 'string') return printValue(value);
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
      return t === undefined ? '<invalid>' : humanDuration(now - t);
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
  value(obj: KubeObject): { found: boolean; value?: unknown };
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
    definition: { name: col.name, type: col.type, format: col.format ?? '', description: col.description, priority: col.priority ?? 0 },
    value: (obj) => {
      const value = col.cell(obj);
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
    strategy?: Pick<Strategy, 'printerColumns'>,
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
      const { found, value } = col.value(obj);
      return cellFor(col.definition.type, found, value, at);
    });
  }

  /** One row: the cells and the object as includeObject asks. */
  row(obj: KubeObject, options: TableOptions = {}): TableRow {
    return { cells: this.cells(obj, options.now), object: this.rowObject(obj, options) };
  }

  /** A Table of a list: one row per item, the list's resourceVersion, continue and remainingItemCount. */
  listTable(list: Pick<KubeList, 'metadata' | 'items'>, options: TableOptions = {}): Table {
    const now = nowMillis(options.now);
    return this.table(
      listMeta(list.metadata),
      (list.items ?? []).map((item) => this.row(item, { ...options, now })),
      options,
      true,
    );
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
