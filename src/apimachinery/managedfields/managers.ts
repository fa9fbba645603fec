/**
 * metadata.managedFields in and out (pkg/util/managedfields/internal/managedfields.go): decoding entries into
 * field sets keyed by manager identifier, encoding them back in kube's order, the identifier itself
 * (BuildManagerIdentifier), stripping the fields no manager owns (stripmeta.go) and capping the number of
 * Update entries at 10 (capmanagers.go).
 */
import type { ManagedFieldsEntry } from '../types.js';
import { goJSONString } from '../golang/json.js';
import { compareStrings } from '../golang/strings.js';
import { parseRFC3339 } from '../golang/time.js';
import { fieldsV1ToSet, setToFieldsV1 } from './fieldsv1.js';
import { fieldPE } from './path.js';
import { FieldSet } from './set.js';
import type { ManagedFields, VersionedSet } from './updater.js';

export const APPLY = 'Apply';
export const UPDATE = 'Update';

/** Field sets plus each manager's timestamp (an RFC 3339 string, or undefined). */
export interface Managed {
  fields: ManagedFields;
  times: Map<string, string | undefined>;
}

export const emptyManaged = (): Managed => ({ fields: new Map(), times: new Map() });

export interface ManagerInfo {
  manager: string;
  operation: string;
  apiVersion?: string;
  subresource?: string;
}

/**
 * BuildManagerIdentifier: the entry as Go marshals it without time, fieldsType and fieldsV1, and without
 * apiVersion for appliers (so an applier keeps one entry across versions).
 */
export function managerIdentifier(info: ManagerInfo): string {
  const parts: string[] = [];
  if (info.manager) parts.push(`"manager":${goJSONString(info.manager)}`);
  if (info.operation) parts.push(`"operation":${goJSONString(info.operation)}`);
  if (info.operation !== APPLY && info.apiVersion) parts.push(`"apiVersion":${goJSONString(info.apiVersion)}`);
  if (info.subresource) parts.push(`"subresource":${goJSONString(info.subresource)}`);
  return `{${parts.join(',')}}`;
}

export function parseManagerIdentifier(id: string): ManagerInfo {
  try {
    const v = JSON.parse(id) as Record<string, unknown>;
    const s = (k: string) => (typeof v[k] === 'string' ? (v[k] as string) : undefined);
    return {
      manager: s('manager') ?? '',
      operation: s('operation') ?? '',
      apiVersion: s('apiVersion'),
      subresource: s('subresource'),
    };
  } catch {
    return { manager: id, operation: '' };
  }
}

export class DecodeError extends Error {}

/** DecodeManagedFields; throws DecodeError on entries kube rejects. */
export function decodeManagedFields(entries: readonly ManagedFieldsEntry[] | undefined | null): Managed {
  const out = emptyManaged();
  (Array.isArray(entries) ? entries : []).forEach((e, i) => {
    if (e.operation !== APPLY && e.operation !== UPDATE) throw new DecodeError('operation must be `Apply` or `Update`');
    if (!e.apiVersion) throw new DecodeError('apiVersion must not be empty');
    if (!e.fieldsType) throw new DecodeError(`missing fieldsType in managed fields entry ${i}`);
    if (e.fieldsType !== 'FieldsV1')
      throw new DecodeError(`invalid fieldsType ${JSON.stringify(e.fieldsType)} in managed fields entry ${i}`);
    const id = managerIdentifier({
      manager: e.manager ?? '',
      operation: e.operation,
      apiVersion: e.apiVersion,
      subresource: e.subresource,
    });
    let set: FieldSet;
    try {
      set = fieldsV1ToSet(e.fieldsV1);
    } catch (err) {
      throw new DecodeError(
        `error decoding versioned set from ${JSON.stringify(e)}: error decoding set: ${(err as Error).message}`,
      );
    }
    out.fields.set(id, { set, apiVersion: e.apiVersion, applied: e.operation === APPLY });
    out.times.set(id, e.time);
  });
  return out;
}

/** Decodes, or gives an empty set of managers when the entries are not valid. */
export function decodeOrEmpty(entries: readonly ManagedFieldsEntry[] | undefined | null): Managed {
  try {
    return decodeManagedFields(entries);
  } catch (err) {
    if (err instanceof DecodeError) return emptyManaged();
    throw err;
  }
}

const seconds = (t: string | undefined) => (t ? (parseRFC3339(t)?.seconds ?? 0) : 0);

/** encodeManagedFields: one entry per manager, sorted by operation, time, manager, apiVersion, subresource. */
export function encodeManagedFields(managed: Managed): ManagedFieldsEntry[] {
  const entries: ManagedFieldsEntry[] = [];
  for (const [id, vs] of managed.fields) {
    const info = parseManagerIdentifier(id);
    const entry: ManagedFieldsEntry = {};
    if (info.manager) entry.manager = info.manager;
    const operation = vs.applied ? APPLY : info.operation;
    if (operation) entry.operation = operation;
    if (vs.apiVersion) entry.apiVersion = vs.apiVersion;
    const time = managed.times.get(id);
    if (time) entry.time = time;
    entry.fieldsType = 'FieldsV1';
    entry.fieldsV1 = setToFieldsV1(vs.set);
    if (info.subresource) entry.subresource = info.subresource;
    entries.push(entry);
  }
  const cmp = (a: string | undefined, b: string | undefined) => compareStrings(a ?? '', b ?? '');
  return entries.sort(
    (p, q) =>
      cmp(p.operation, q.operation) ||
      seconds(p.time) - seconds(q.time) ||
      cmp(p.manager, q.manager) ||
      cmp(p.apiVersion, q.apiVersion) ||
      cmp(p.subresource, q.subresource),
  );
}

/**
 * Fields no manager owns: type meta and the metadata the server sets. kube's stripmeta.go list, plus
 * deletionTimestamp and deletionGracePeriodSeconds, which only the server sets (kube never passes those writes
 * through the field manager, so they never show up there either).
 */
export const STRIPPED = FieldSet.of(
  [fieldPE('apiVersion')],
  [fieldPE('kind')],
  [fieldPE('metadata')],
  ...[
    'name',
    'namespace',
    'creationTimestamp',
    'selfLink',
    'uid',
    'clusterName',
    'generation',
    'managedFields',
    'resourceVersion',
    'deletionTimestamp',
    'deletionGracePeriodSeconds',
  ].map((f) => [fieldPE('metadata'), fieldPE(f)]),
);

/** stripMetaManager.stripFields for one manager. */
export function stripManager(fields: ManagedFields, id: string): void {
  const vs = fields.get(id);
  if (!vs) return;
  const set = vs.set.difference(STRIPPED);
  if (set.empty()) fields.delete(id);
  else fields.set(id, { ...vs, set });
}

export const MAX_UPDATE_MANAGERS = 10;
const ANCIENT = 'ancient-changes';

/** capUpdateManagers: merges the oldest Update entries into "ancient-changes" until at most 10 remain. */
export function capUpdateManagers(managed: Managed, max = MAX_UPDATE_MANAGERS): void {
  const updaters = [...managed.fields].filter(([, vs]) => !vs.applied).map(([id]) => id);
  if (updaters.length <= max) return;
  updaters.sort((a, b) => seconds(managed.times.get(a)) - seconds(managed.times.get(b)) || compareStrings(a, b));
  const firstOfVersion = new Map<string, string>();
  let length = updaters.length;
  for (let i = 0; i < updaters.length && length > max; i++) {
    const id = updaters[i];
    const vs = managed.fields.get(id) as VersionedSet;
    const time = managed.times.get(id);
    const bucket = managerIdentifier({ manager: ANCIENT, operation: UPDATE, apiVersion: vs.apiVersion });
    const first = firstOfVersion.get(vs.apiVersion);
    if (first === undefined) {
      firstOfVersion.set(vs.apiVersion, id);
      continue;
    }
    if (!managed.fields.has(bucket)) {
      const s = managed.fields.get(first) as VersionedSet;
      managed.fields.delete(first);
      managed.fields.set(bucket, s);
    }
    const b = managed.fields.get(bucket) as VersionedSet;
    managed.fields.set(bucket, { set: vs.set.union(b.set), apiVersion: vs.apiVersion, applied: vs.applied });
    managed.fields.delete(id);
    length--;
    managed.times.set(bucket, time);
  }
}
