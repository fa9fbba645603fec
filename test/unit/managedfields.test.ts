import { describe, expect, test } from '@jest/globals';
import {
  applyObject,
  updateManagedFields,
  type FieldManagerContext,
} from '../../src/apimachinery/managedfields/index.js';
import { fieldsV1ToSet, setToFieldsV1 } from '../../src/apimachinery/managedfields/fieldsv1.js';
import type { KubeObject, ManagedFieldsEntry } from '../../src/apimachinery/types.js';
import { loadDefinitions } from '../../src/registry/definitions.js';
import { statusOf } from '../support/errors.js';

const API = 'management.platform.sh/v1';
const defs = loadDefinitions();
const secretDef = defs.find((d) => d.kind === 'SharedSecret')!;
const clusterDef = defs.find((d) => d.kind === 'Cluster')!;

const T0 = '2025-05-01T10:00:00Z';
const T1 = '2025-05-01T10:01:00Z';
const T2 = '2025-05-01T10:02:00Z';
const T3 = '2025-05-01T10:03:00Z';

const secretCtx = (now: string): FieldManagerContext => ({
  apiVersion: API,
  now,
  schema: secretDef.schema,
  hasStatusSubresource: true,
});
const clusterCtx = (now: string): FieldManagerContext => ({
  apiVersion: API,
  now,
  schema: clusterDef.schema,
  hasStatusSubresource: true,
});

function secret(spec: Record<string, unknown>, meta: Record<string, unknown> = {}): KubeObject {
  return { apiVersion: API, kind: 'SharedSecret', metadata: { name: 's1', namespace: 'default', ...meta }, spec };
}

/** What the store keeps: the object with system metadata and its managedFields. */
function stored(obj: KubeObject, managedFields: ManagedFieldsEntry[]): KubeObject {
  const out = structuredClone(obj);
  out.metadata = { ...out.metadata, uid: 'u-1', resourceVersion: '1', creationTimestamp: T0 };
  if (managedFields.length) out.metadata.managedFields = managedFields;
  else delete out.metadata.managedFields;
  return out;
}

const entry = (mf: ManagedFieldsEntry[] | undefined, manager: string, operation = 'Apply') =>
  mf?.find((e) => e.manager === manager && e.operation === operation);

describe('FieldsV1 encoding', () => {
  test('a create records what kube records for a new custom resource', () => {
    const obj = secret(
      { displayName: 'S1', data: { k: 'dg==' }, access: [{ verbs: ['get'], users: ['alice'] }], owner: { team: 't' } },
      { labels: { team: 'blue' }, annotations: { note: 'x' }, finalizers: ['platform.sh/cleanup'] },
    );
    const mf = updateManagedFields(undefined, obj, 'kubectl-create', '', secretCtx(T0));
    expect(mf).toEqual([
      {
        manager: 'kubectl-create',
        operation: 'Update',
        apiVersion: API,
        time: T0,
        fieldsType: 'FieldsV1',
        fieldsV1: {
          'f:metadata': {
            'f:annotations': { '.': {}, 'f:note': {} },
            'f:finalizers': { '.': {}, 'v:"platform.sh/cleanup"': {} },
            'f:labels': { '.': {}, 'f:team': {} },
          },
          'f:spec': {
            '.': {},
            'f:access': {},
            'f:data': { '.': {}, 'f:k': {} },
            'f:displayName': {},
            'f:owner': { '.': {}, 'f:team': {} },
          },
        },
      },
    ]);
    // Key order is kube's too: members and children sorted, "." last.
    expect(JSON.stringify(mf[0].fieldsV1)).toBe(
      '{"f:metadata":{"f:annotations":{"f:note":{},".":{}},"f:finalizers":{"v:\\"platform.sh/cleanup\\"":{},".":{}},"f:labels":{"f:team":{},".":{}}},"f:spec":{"f:access":{},"f:data":{"f:k":{},".":{}},"f:displayName":{},"f:owner":{"f:team":{},".":{}},".":{}}}'.replace(
        /(\{[^{}]*)/g,
        (m) => m,
      ),
    );
  });

  test('an apply records only the config, without "." markers for structs and maps', () => {
    const cfg = secret({ displayName: 'S1', data: { k: 'dg==' } }, { labels: { team: 'blue' } });
    const out = applyObject(undefined, cfg, 'kubectl', false, '', secretCtx(T0));
    expect(out.metadata.managedFields).toEqual([
      {
        manager: 'kubectl',
        operation: 'Apply',
        apiVersion: API,
        time: T0,
        fieldsType: 'FieldsV1',
        fieldsV1: {
          'f:metadata': { 'f:labels': { 'f:team': {} } },
          'f:spec': { 'f:data': { 'f:k': {} }, 'f:displayName': {} },
        },
      },
    ]);
    expect(out.spec).toEqual({ displayName: 'S1', data: { k: 'dg==' } });
  });

  test('owner references are keyed by uid and atomic; generateName is tracked, name and namespace are not', () => {
    const obj: KubeObject = {
      apiVersion: API,
      kind: 'Cluster',
      metadata: {
        name: 'c-abc',
        generateName: 'c-',
        ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'u-9', controller: true }],
      },
      spec: { displayName: 'C', local: true },
    };
    const mf = updateManagedFields(undefined, obj, 'controller', '', clusterCtx(T0));
    expect(mf[0].fieldsV1).toEqual({
      'f:metadata': {
        'f:generateName': {},
        'f:ownerReferences': { '.': {}, 'k:{"uid":"u-9"}': {} },
      },
      'f:spec': { '.': {}, 'f:displayName': {}, 'f:local': {} },
    });
  });

  test('sets round-trip through FieldsV1, including keys, values and "."', () => {
    const fields = {
      'f:metadata': {
        'f:ownerReferences': { 'k:{"uid":"a<b"}': {}, '.': {} },
        'f:finalizers': { 'v:"x"': {}, 'v:"a"': {} },
      },
      'f:status': { 'f:conditions': {}, 'f:foo': { '.': {}, 'f:bar': {} } },
      'x:unknown': {},
    };
    const out = setToFieldsV1(fieldsV1ToSet(fields));
    expect(JSON.stringify(out)).toBe(
      '{"f:metadata":{"f:finalizers":{"v:\\"a\\"":{},"v:\\"x\\"":{}},"f:ownerReferences":{"k:{\\"uid\\":\\"a\\\\u003cb\\"}":{},".":{}}},' +
        '"f:status":{"f:conditions":{},"f:foo":{"f:bar":{},".":{}}}}',
    );
  });
});

describe('update then apply by another manager', () => {
  const created = secret({ displayName: 'S1', description: 'd' });
  const mf0 = updateManagedFields(undefined, created, 'ui', '', secretCtx(T0));
  const live = stored(created, mf0);

  test('an apply of the same values shares ownership without conflict', () => {
    const out = applyObject(live, secret({ displayName: 'S1' }), 'deployer', false, '', secretCtx(T1));
    expect(out.spec).toEqual({ displayName: 'S1', description: 'd' });
    const mf = out.metadata.managedFields!;
    expect(mf.map((e) => [e.manager, e.operation])).toEqual([
      ['deployer', 'Apply'],
      ['ui', 'Update'],
    ]);
    expect(entry(mf, 'ui', 'Update')!.fieldsV1).toEqual({
      'f:spec': { '.': {}, 'f:description': {}, 'f:displayName': {} },
    });
    expect(entry(mf, 'deployer')!.fieldsV1).toEqual({ 'f:spec': { 'f:displayName': {} } });
  });

  test('a changed value owned by an Update manager is a conflict', () => {
    const err = statusOf(() => applyObject(live, secret({ displayName: 'S2' }), 'deployer', false, '', secretCtx(T1)));
    expect(err.code).toBe(409);
    expect(err.status).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `Apply failed with 1 conflict: conflict with "ui" using ${API}: .spec.displayName`,
      reason: 'Conflict',
      details: {
        causes: [
          { reason: 'FieldManagerConflict', message: `conflict with "ui" using ${API}`, field: '.spec.displayName' },
        ],
      },
      code: 409,
    });
  });

  test('force takes the field over', () => {
    const out = applyObject(live, secret({ displayName: 'S2' }), 'deployer', true, '', secretCtx(T1));
    expect(out.spec.displayName).toBe('S2');
    const mf = out.metadata.managedFields!;
    expect(entry(mf, 'ui', 'Update')!.fieldsV1).toEqual({ 'f:spec': { '.': {}, 'f:description': {} } });
    expect(entry(mf, 'ui', 'Update')!.time).toBe(T0);
    expect(entry(mf, 'deployer')).toEqual({
      manager: 'deployer',
      operation: 'Apply',
      apiVersion: API,
      time: T1,
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:spec': { 'f:displayName': {} } },
    });
  });

  test('an Update takes changed fields from an applier, without conflict', () => {
    const applied = applyObject(
      live,
      secret({ displayName: 'S1', owner: { user: 'bob' } }),
      'deployer',
      false,
      '',
      secretCtx(T1),
    );
    const edited = structuredClone(applied);
    edited.spec.owner.user = 'carol';
    const mf = updateManagedFields(applied, edited, 'ui', '', secretCtx(T2));
    expect(entry(mf, 'deployer')!.fieldsV1).toEqual({ 'f:spec': { 'f:displayName': {} } });
    expect(entry(mf, 'ui', 'Update')).toEqual({
      manager: 'ui',
      operation: 'Update',
      apiVersion: API,
      time: T2,
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:spec': { '.': {}, 'f:description': {}, 'f:displayName': {}, 'f:owner': { 'f:user': {} } } },
    });
  });

  test('an update that changes nothing keeps the entry and its time', () => {
    const mf = updateManagedFields(live, structuredClone(live), 'ui', '', secretCtx(T3));
    expect(mf).toEqual(mf0);
  });

  test('a removed field leaves every set', () => {
    const applied = applyObject(
      live,
      secret({ displayName: 'S1', description: 'd' }),
      'deployer',
      false,
      '',
      secretCtx(T1),
    );
    const edited = structuredClone(applied);
    delete edited.spec.description;
    const mf = updateManagedFields(applied, edited, 'editor', '', secretCtx(T2));
    expect(entry(mf, 'deployer')!.fieldsV1).toEqual({ 'f:spec': { 'f:displayName': {} } });
    expect(entry(mf, 'ui', 'Update')!.fieldsV1).toEqual({ 'f:spec': { '.': {}, 'f:displayName': {} } });
    // The editor changed nothing it keeps, so it gets no entry.
    expect(entry(mf, 'editor', 'Update')).toBeUndefined();
  });
});

describe('conflicts', () => {
  test('several conflicts group by manager, in manager order', () => {
    let live = stored(
      secret({ displayName: 'A' }),
      updateManagedFields(undefined, secret({ displayName: 'A' }), 'zed', '', secretCtx(T0)),
    );
    live = applyObject(live, secret({ description: 'x', data: { k: 'YQ==' } }), 'alpha', false, '', secretCtx(T1));
    live.metadata.resourceVersion = '2';
    const err = statusOf(() =>
      applyObject(
        live,
        secret({ displayName: 'B', description: 'y', data: { k: 'Yg==' } }),
        'beta',
        false,
        '',
        secretCtx(T2),
      ),
    );
    expect(err.code).toBe(409);
    // Within a manager, paths come in set order: a node's members before its children's paths.
    expect(err.status.message).toBe(
      `Apply failed with 3 conflicts: conflicts with "alpha":\n- .spec.description\n- .spec.data.k\nconflicts with "zed" using ${API}:\n- .spec.displayName`,
    );
    expect(err.status.details?.causes).toEqual([
      { reason: 'FieldManagerConflict', message: 'conflict with "alpha"', field: '.spec.description' },
      { reason: 'FieldManagerConflict', message: 'conflict with "alpha"', field: '.spec.data.k' },
      { reason: 'FieldManagerConflict', message: `conflict with "zed" using ${API}`, field: '.spec.displayName' },
    ]);
  });

  test('a status subresource manager is printed with its subresource', () => {
    const base = stored(secret({ displayName: 'A' }), []);
    const withStatus = { ...structuredClone(base), status: { conditions: [{ type: 'Ready', status: 'True' }] } };
    const mf = updateManagedFields(base, withStatus, 'controller', 'status', secretCtx(T1));
    expect(mf).toEqual([]); // no managed fields yet: kube does not start tracking on an update
    const tracked = stored(
      secret({ displayName: 'A' }),
      updateManagedFields(undefined, secret({ displayName: 'A' }), 'ui', '', secretCtx(T0)),
    );
    const statusMf = updateManagedFields(
      tracked,
      { ...structuredClone(tracked), status: withStatus.status },
      'controller',
      'status',
      secretCtx(T1),
    );
    expect(entry(statusMf, 'controller', 'Update')).toEqual({
      manager: 'controller',
      operation: 'Update',
      apiVersion: API,
      time: T1,
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:status': { '.': {}, 'f:conditions': {} } },
      subresource: 'status',
    });
    const live = { ...stored(secret({ displayName: 'A' }), statusMf), status: withStatus.status };
    const err = statusOf(() =>
      applyObject(
        live,
        { ...secret({}), status: { conditions: [{ type: 'Ready', status: 'False' }] } } as KubeObject,
        'other',
        false,
        'status',
        secretCtx(T2),
      ),
    );
    expect(err.status.message).toBe(
      `Apply failed with 1 conflict: conflict with "controller" with subresource "status" using ${API}: .status.conditions`,
    );
  });
});

describe('apply removes what its manager stopped applying', () => {
  const ctx = secretCtx(T0);
  const first = applyObject(
    undefined,
    secret({ displayName: 'A', description: 'd', data: { a: 'YQ==', b: 'Yg==' } }, { labels: { x: '1', y: '2' } }),
    'deployer',
    false,
    '',
    ctx,
  );
  const live = stored(first, first.metadata.managedFields!);

  test('fields dropped from the config are removed from the object', () => {
    const out = applyObject(
      live,
      secret({ displayName: 'A', data: { a: 'YQ==' } }, { labels: { x: '1' } }),
      'deployer',
      false,
      '',
      secretCtx(T1),
    );
    expect(out.spec).toEqual({ displayName: 'A', data: { a: 'YQ==' } });
    expect(out.metadata.labels).toEqual({ x: '1' });
    expect(entry(out.metadata.managedFields, 'deployer')!.fieldsV1).toEqual({
      'f:metadata': { 'f:labels': { 'f:x': {} } },
      'f:spec': { 'f:data': { 'f:a': {} }, 'f:displayName': {} },
    });
    expect(entry(out.metadata.managedFields, 'deployer')!.time).toBe(T1);
  });

  test('a whole struct disappears when nothing in it is applied or owned any more', () => {
    const out = applyObject(live, secret({}, { labels: { x: '1', y: '2' } }), 'deployer', false, '', secretCtx(T1));
    expect(out.spec).toBeUndefined();
  });

  test('a field another manager also owns is only released', () => {
    const shared = applyObject(live, secret({ description: 'd' }), 'other', false, '', secretCtx(T1));
    const out = applyObject(
      stored(shared, shared.metadata.managedFields!),
      secret({ displayName: 'A' }),
      'deployer',
      false,
      '',
      secretCtx(T2),
    );
    expect(out.spec).toEqual({ displayName: 'A', description: 'd' });
    expect(entry(out.metadata.managedFields, 'other')!.fieldsV1).toEqual({ 'f:spec': { 'f:description': {} } });
    expect(entry(out.metadata.managedFields, 'deployer')!.fieldsV1).toEqual({ 'f:spec': { 'f:displayName': {} } });
  });

  test('a field an Update manager took over is kept', () => {
    const edited = structuredClone(live);
    edited.spec.description = 'changed';
    const mf = updateManagedFields(live, edited, 'ui', '', secretCtx(T1));
    const out = applyObject(stored(edited, mf), secret({ displayName: 'A' }), 'deployer', false, '', secretCtx(T2));
    expect(out.spec).toEqual({ displayName: 'A', description: 'changed' });
  });

  test('an identical re-apply returns the live object unchanged', () => {
    const cfg = secret(
      { displayName: 'A', description: 'd', data: { a: 'YQ==', b: 'Yg==' } },
      { labels: { x: '1', y: '2' } },
    );
    const out = applyObject(live, cfg, 'deployer', false, '', secretCtx(T3));
    expect(out).toEqual(live);
    const again = applyObject(out, cfg, 'deployer', false, '', secretCtx(T3));
    expect(again).toEqual(live);
  });

  test('a second applier of identical values changes only managedFields', () => {
    const cfg = secret({ displayName: 'A' });
    const out = applyObject(live, cfg, 'second', false, '', secretCtx(T3));
    const { managedFields, ...meta } = out.metadata;
    expect({ ...out, metadata: meta }).toEqual({ ...live, metadata: { ...live.metadata, managedFields: undefined } });
    expect(entry(managedFields, 'second')).toEqual({
      manager: 'second',
      operation: 'Apply',
      apiVersion: API,
      time: T3,
      fieldsType: 'FieldsV1',
      fieldsV1: { 'f:spec': { 'f:displayName': {} } },
    });
  });
});

describe('metadata', () => {
  test('labels, annotations and finalizers merge per key; ownership is per key', () => {
    const base = applyObject(
      undefined,
      secret({ displayName: 'A' }, { labels: { a: '1' }, finalizers: ['f/one'] }),
      'one',
      false,
      '',
      secretCtx(T0),
    );
    const out = applyObject(
      stored(base, base.metadata.managedFields!),
      secret({}, { labels: { b: '2' }, annotations: { n: 'x' }, finalizers: ['f/two'] }),
      'two',
      false,
      '',
      secretCtx(T1),
    );
    expect(out.metadata.labels).toEqual({ a: '1', b: '2' });
    expect(out.metadata.annotations).toEqual({ n: 'x' });
    expect(out.metadata.finalizers).toEqual(['f/one', 'f/two']);
    expect(entry(out.metadata.managedFields, 'two')!.fieldsV1).toEqual({
      'f:metadata': { 'f:annotations': { 'f:n': {} }, 'f:finalizers': { 'v:"f/two"': {} }, 'f:labels': { 'f:b': {} } },
    });
    const err = statusOf(() =>
      applyObject(
        stored(out, out.metadata.managedFields!),
        secret({}, { labels: { a: 'changed' } }),
        'two',
        false,
        '',
        secretCtx(T2),
      ),
    );
    expect(err.status.message).toBe('Apply failed with 1 conflict: conflict with "one": .metadata.labels.a');
  });

  test('system metadata is never owned', () => {
    const out = applyObject(
      undefined,
      secret({ displayName: 'A' }, { uid: 'x', resourceVersion: '5', generation: 2, creationTimestamp: null }),
      'm',
      false,
      '',
      secretCtx(T0),
    );
    expect(out.metadata.managedFields![0].fieldsV1).toEqual({ 'f:spec': { 'f:displayName': {} } });
  });
});

describe('objects without managedFields', () => {
  const plain = stored(secret({ displayName: 'A', description: 'd' }, { labels: { app: 'x' } }), []);

  test('the first apply gives existing fields to before-first-apply', () => {
    const out = applyObject(plain, secret({ displayName: 'A' }), 'deployer', false, '', secretCtx(T1));
    expect(out.metadata.managedFields).toEqual([
      {
        manager: 'deployer',
        operation: 'Apply',
        apiVersion: API,
        time: T1,
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:spec': { 'f:displayName': {} } },
      },
      {
        manager: 'before-first-apply',
        operation: 'Update',
        apiVersion: API,
        time: T1,
        fieldsType: 'FieldsV1',
        fieldsV1: {
          'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
          'f:spec': { '.': {}, 'f:description': {}, 'f:displayName': {} },
        },
      },
    ]);
  });

  test('and they conflict like any Update manager', () => {
    const err = statusOf(() => applyObject(plain, secret({ displayName: 'B' }), 'deployer', false, '', secretCtx(T1)));
    expect(err.status.message).toBe(
      `Apply failed with 1 conflict: conflict with "before-first-apply" using ${API}: .spec.displayName`,
    );
  });

  test('updates do not start tracking; a create does', () => {
    const edited = structuredClone(plain);
    edited.spec.displayName = 'B';
    expect(updateManagedFields(plain, edited, 'ui', '', secretCtx(T1))).toEqual([]);
    expect(updateManagedFields(undefined, edited, 'ui', '', secretCtx(T1))).toHaveLength(1);
  });

  test('managedFields: [] in a write clears them', () => {
    const tracked = stored(plain, updateManagedFields(undefined, plain, 'ui', '', secretCtx(T0)));
    const edited = structuredClone(tracked);
    edited.metadata.managedFields = [];
    edited.spec.displayName = 'B';
    expect(updateManagedFields(tracked, edited, 'ui', '', secretCtx(T1))).toEqual([]);
  });
});

describe('kube details', () => {
  test('status is not owned through the main resource when the kind has a status subresource', () => {
    const cfg = {
      ...secret({ displayName: 'A' }),
      status: { conditions: [{ type: 'Ready', status: 'True' }] },
    } as KubeObject;
    const out = applyObject(undefined, cfg, 'm', false, '', secretCtx(T0));
    expect(out.metadata.managedFields![0].fieldsV1).toEqual({ 'f:spec': { 'f:displayName': {} } });
  });

  test('the Cluster status keeps unknown fields, each a member', () => {
    const live = stored(
      { apiVersion: API, kind: 'Cluster', metadata: { name: 'c1' }, spec: { displayName: 'C' } },
      updateManagedFields(
        undefined,
        { apiVersion: API, kind: 'Cluster', metadata: { name: 'c1' }, spec: { displayName: 'C' } },
        'ui',
        '',
        clusterCtx(T0),
      ),
    );
    const withStatus = { ...structuredClone(live), status: { phase: 'Ready', details: { nodes: 3 }, list: [1, 2] } };
    const mf = updateManagedFields(live, withStatus, 'agent', 'status', clusterCtx(T1));
    expect(entry(mf, 'agent', 'Update')!.fieldsV1).toEqual({
      'f:status': { '.': {}, 'f:details': { '.': {}, 'f:nodes': {} }, 'f:list': {}, 'f:phase': {} },
    });
  });

  test('an apply config with an unknown field is a 400 (kube sends a 500: kubernetes/kubernetes#139253)', () => {
    const err = statusOf(() =>
      applyObject(undefined, secret({ displayName: 'A', bogus: 1 }), 'm', false, '', secretCtx(T0)),
    );
    expect(err.status).toMatchObject({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      message: `failed to create typed patch object (default/s1; ${API}, Kind=SharedSecret): .spec.bogus: field not declared in schema`,
      reason: 'BadRequest',
      code: 400,
    });
  });

  test('a value of the wrong type is printed as Go prints it (%v: a float64 in the shortest %g form)', () => {
    const err = statusOf(() =>
      applyObject(
        undefined,
        secret({ displayName: { b: 1234567.5, a: [1e20, 0.00001] } }),
        'm',
        false,
        '',
        secretCtx(T0),
      ),
    );
    expect(err.code).toBe(400);
    expect(err.status.message).toBe(
      `failed to create typed patch object (default/s1; ${API}, Kind=SharedSecret): .spec.displayName: expected string, got &{map[a:[1e+20 1e-05] b:1.2345675e+06]}`,
    );
  });

  test('an apply of another version is a 400', () => {
    const err = statusOf(() =>
      applyObject(undefined, { ...secret({}), apiVersion: 'management.platform.sh/v2' }, 'm', false, '', secretCtx(T0)),
    );
    expect(err.code).toBe(400);
    expect(err.status.message).toBe(
      `Incorrect version specified in apply patch. Specified patch version: management.platform.sh/v2, expected: ${API}`,
    );
  });

  test('an apply config may not set managedFields', () => {
    const err = statusOf(() =>
      applyObject(undefined, secret({}, { managedFields: [] }), 'm', false, '', secretCtx(T0)),
    );
    expect(err.code).toBe(400);
    expect(err.status.message).toBe('metadata.managedFields must be nil');
  });

  test('at most 10 Update managers; the oldest merge into ancient-changes', () => {
    let live = stored(
      secret({ displayName: 'x' }),
      updateManagedFields(undefined, secret({ displayName: 'x' }), 'm0', '', secretCtx('2025-05-01T10:00:00Z')),
    );
    for (let i = 1; i <= 11; i++) {
      const edited = structuredClone(live);
      edited.spec.data = { ...(edited.spec.data ?? {}), [`k${i}`]: 'YQ==' };
      const now = `2025-05-01T10:${String(i).padStart(2, '0')}:00Z`;
      live = stored(edited, updateManagedFields(live, edited, `m${i}`, '', secretCtx(now)));
    }
    const mf = live.metadata.managedFields!;
    expect(mf).toHaveLength(10);
    const ancient = entry(mf, 'ancient-changes', 'Update')!;
    expect(ancient.time).toBe('2025-05-01T10:02:00Z');
    expect(ancient.fieldsV1).toEqual({
      'f:spec': { '.': {}, 'f:data': { '.': {}, 'f:k1': {}, 'f:k2': {} }, 'f:displayName': {} },
    });
    expect(mf.map((e) => e.manager)).toEqual([
      'ancient-changes',
      'm3',
      'm4',
      'm5',
      'm6',
      'm7',
      'm8',
      'm9',
      'm10',
      'm11',
    ]);
  });

  test('kubectl takes over from client-side apply when values match the last-applied annotation', () => {
    const manifest = secret({ displayName: 'A' });
    const lastApplied = JSON.stringify(manifest);
    const created = secret(
      { displayName: 'A' },
      { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': lastApplied } },
    );
    const live = stored(
      created,
      updateManagedFields(undefined, created, 'kubectl-client-side-apply', '', secretCtx(T0)),
    );
    const out = applyObject(live, secret({ displayName: 'B' }), 'kubectl', false, '', secretCtx(T1));
    expect(out.spec.displayName).toBe('B');
    expect(out.metadata.annotations!['kubectl.kubernetes.io/last-applied-configuration']).toBe(
      '{"apiVersion":"management.platform.sh/v1","kind":"SharedSecret","metadata":{"name":"s1","namespace":"default"},"spec":{"displayName":"B"}}\n',
    );
    // Another manager name gets the conflict.
    expect(statusOf(() => applyObject(live, secret({ displayName: 'B' }), 'helm', false, '', secretCtx(T1))).code).toBe(
      409,
    );
  });
});

describe('lists', () => {
  test('an atomic list is one field: replaced whole, and a conflict on the list itself', () => {
    const created = secret({ access: [{ verbs: ['get'], users: ['a'] }] });
    const live = stored(created, updateManagedFields(undefined, created, 'ui', '', secretCtx(T0)));
    const cfg = secret({ access: [{ verbs: ['list'], teams: ['t'] }] });
    const err = statusOf(() => applyObject(live, cfg, 'deployer', false, '', secretCtx(T1)));
    expect(err.status.details?.causes).toEqual([
      { reason: 'FieldManagerConflict', message: `conflict with "ui" using ${API}`, field: '.spec.access' },
    ]);
    const out = applyObject(live, cfg, 'deployer', true, '', secretCtx(T1));
    expect(out.spec.access).toEqual([{ verbs: ['list'], teams: ['t'] }]);
    // The creator still owns spec itself (a member without children is written {}).
    expect(entry(out.metadata.managedFields, 'ui', 'Update')!.fieldsV1).toEqual({ 'f:spec': {} });
  });

  test('owner references merge by uid; a changed one conflicts on its key', () => {
    const ref = (uid: string, name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', name, uid });
    const created = secret({ displayName: 'A' }, { ownerReferences: [ref('u1', 'one')] });
    const live = stored(created, updateManagedFields(undefined, created, 'controller', '', secretCtx(T0)));
    const out = applyObject(
      live,
      secret({}, { ownerReferences: [ref('u2', 'two')] }),
      'deployer',
      false,
      '',
      secretCtx(T1),
    );
    expect(out.metadata.ownerReferences).toEqual([ref('u1', 'one'), ref('u2', 'two')]);
    expect(entry(out.metadata.managedFields, 'deployer')!.fieldsV1).toEqual({
      'f:metadata': { 'f:ownerReferences': { 'k:{"uid":"u2"}': {} } },
    });
    const err = statusOf(() =>
      applyObject(live, secret({}, { ownerReferences: [ref('u1', 'renamed')] }), 'deployer', false, '', secretCtx(T1)),
    );
    expect(err.status.message).toBe(
      `Apply failed with 1 conflict: conflict with "controller" using ${API}: .metadata.ownerReferences[uid="u1"]`,
    );
  });

  test('set items keep the live order, with the config order for shared and new items', () => {
    const created = secret({}, { finalizers: ['a', 'b'] });
    const live = stored(created, updateManagedFields(undefined, created, 'ui', '', secretCtx(T0)));
    const out = applyObject(live, secret({}, { finalizers: ['c', 'a'] }), 'deployer', false, '', secretCtx(T1));
    expect(out.metadata.finalizers).toEqual(['c', 'a', 'b']);
    const dropped = applyObject(
      stored(out, out.metadata.managedFields!),
      secret({}, { finalizers: ['a'] }),
      'deployer',
      false,
      '',
      secretCtx(T2),
    );
    // "c" was only the deployer's: it goes; "a" and "b" are still the creator's.
    expect(dropped.metadata.finalizers).toEqual(['a', 'b']);
    expect(entry(dropped.metadata.managedFields, 'deployer')!.fieldsV1).toEqual({
      'f:metadata': { 'f:finalizers': { 'v:"a"': {} } },
    });
  });

  test('a set item in the config that is not a scalar is a 400 with the structured-merge-diff message', () => {
    const err = statusOf(() =>
      applyObject(undefined, secret({}, { finalizers: [{ a: 1 }] }), 'm', false, '', secretCtx(T0)),
    );
    expect(err.code).toBe(400);
    expect(err.status.message).toBe(
      `failed to create typed patch object (default/s1; ${API}, Kind=SharedSecret): .metadata.finalizers: element 0: associative list without keys has an element that's a map type`,
    );
  });
});

describe('no-op writes', () => {
  test('keepTimestampsOfNoopWrite restores the stored times when only they changed', async () => {
    const { keepTimestampsOfNoopWrite } = await import('../../src/apimachinery/managedfields/index.js');
    const live = stored(
      secret({ displayName: 'A' }),
      updateManagedFields(undefined, secret({ displayName: 'A' }), 'ui', '', secretCtx(T0)),
    );
    const touched = structuredClone(live);
    touched.metadata.managedFields![0].time = T2;
    expect(keepTimestampsOfNoopWrite(touched, live)).toEqual(live);
    const changed = structuredClone(touched);
    changed.spec.displayName = 'B';
    expect(keepTimestampsOfNoopWrite(changed, live)).toBe(changed);
  });

  test('a label key with dots and slashes is one field', () => {
    const out = applyObject(
      undefined,
      secret({}, { labels: { 'app.kubernetes.io/name': 'x' } }),
      'm',
      false,
      '',
      secretCtx(T0),
    );
    expect(out.metadata.managedFields![0].fieldsV1).toEqual({
      'f:metadata': { 'f:labels': { 'f:app.kubernetes.io/name': {} } },
    });
  });
});

describe('schema changes', () => {
  test('a list tracked item by item that is now atomic becomes one field', () => {
    const schema = structuredClone(secretDef.schema);
    const live = stored(secret({}, { finalizers: ['a'] }), [
      {
        manager: 'm',
        operation: 'Apply',
        apiVersion: API,
        time: T0,
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:spec': { 'f:access': { 'k:{"name":"r"}': { '.': {}, 'f:name': {} } } } },
      },
    ]);
    live.spec = { access: [{ name: 'r' }] };
    const out = applyObject(live, secret({ access: [{ name: 'r' }] }), 'other', false, '', {
      apiVersion: API,
      now: T1,
      schema,
    });
    expect(entry(out.metadata.managedFields, 'm')!.fieldsV1).toEqual({ 'f:spec': { 'f:access': {} } });
  });
});

describe('writes to the main resource and to status', () => {
  test('a spec write that omits status leaves the status owners alone', () => {
    const created = secret({ displayName: 'A' });
    let live = stored(created, updateManagedFields(undefined, created, 'ui', '', secretCtx(T0)));
    const withStatus = { ...structuredClone(live), status: { conditions: [{ type: 'Ready', status: 'True' }] } };
    live = {
      ...withStatus,
      metadata: {
        ...withStatus.metadata,
        managedFields: updateManagedFields(live, withStatus, 'controller', 'status', secretCtx(T1)),
      },
    };
    const put = structuredClone(live);
    delete put.status;
    put.spec.displayName = 'B';
    const mf = updateManagedFields(live, put, 'ui', '', secretCtx(T2));
    expect(entry(mf, 'controller', 'Update')!.fieldsV1).toEqual({ 'f:status': { '.': {}, 'f:conditions': {} } });
    expect(entry(mf, 'ui', 'Update')!.time).toBe(T2);
  });

  test('managedFields sent with an update are used as they are', () => {
    const created = secret({ displayName: 'A' });
    const live = stored(created, updateManagedFields(undefined, created, 'ui', '', secretCtx(T0)));
    const edited = structuredClone(live);
    edited.metadata.managedFields = [
      {
        manager: 'someone',
        operation: 'Update',
        apiVersion: API,
        time: T0,
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:spec': { 'f:displayName': {} } },
      },
    ];
    edited.spec.description = 'd';
    const mf = updateManagedFields(live, edited, 'ui', '', secretCtx(T1));
    expect(mf.map((e) => [e.manager, e.time, e.fieldsV1])).toEqual([
      ['someone', T0, { 'f:spec': { 'f:displayName': {} } }],
      ['ui', T1, { 'f:spec': { 'f:description': {} } }],
    ]);
  });
});
