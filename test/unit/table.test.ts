import { describe, expect, test } from '@jest/globals';
import { humanDuration } from '../../src/apimachinery/duration.js';
import { goTimeMillis, parseRFC3339 } from '../../src/apimachinery/golang/time.js';
import { compileJSONPath } from '../../src/apimachinery/jsonpath.js';
import { StatusError } from '../../src/apimachinery/status.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import {
  CREATION_TIMESTAMP_DESCRIPTION,
  NAME_DESCRIPTION,
  TableConvertor,
  parseIncludeObject,
  partialObjectMetadata,
  partialObjectMetadataList,
} from '../../src/http/table.js';
import { loadDefinitions, type ResourceDefinition } from '../../src/registry/definitions.js';
import { strategies } from '../../src/kinds/index.js';

const definitions = loadDefinitions();
const sharedSecretDef = definitions.find((d) => d.kind === 'SharedSecret')!;
const clusterDef = definitions.find((d) => d.kind === 'Cluster')!;
const secrets = new TableConvertor(sharedSecretDef, strategies.SharedSecret);
const clusters = new TableConvertor(clusterDef, strategies.Cluster);

const NOW = Date.parse('2025-05-01T10:00:00Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString().replace(/\.000Z$/, 'Z');
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

function secret(name: string, created: string, spec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'management.platform.sh/v1',
    kind: 'SharedSecret',
    metadata: {
      name,
      namespace: 'team-a',
      uid: `uid-${name}`,
      resourceVersion: '811',
      creationTimestamp: created,
      labels: { tier: 'db' },
      managedFields: [{ manager: 'kubectl', operation: 'Update' }],
    },
    spec,
  };
}

function cluster(name: string, created: string, spec: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: 'management.platform.sh/v1',
    kind: 'Cluster',
    metadata: { name, uid: `uid-${name}`, resourceVersion: '900', creationTimestamp: created },
    spec,
    status: {},
  };
}

function crdColumn(name: string, type: string, path: string) {
  return {
    name,
    type,
    format: '',
    description: `Custom resource definition column (in JSONPath format): ${path}`,
    priority: 0,
  };
}

describe('columns', () => {
  test('SharedSecret: Name, the CRD columns, and the computed Keys column before Age', () => {
    expect(secrets.columnDefinitions).toEqual([
      { name: 'Name', type: 'string', format: 'name', description: NAME_DESCRIPTION, priority: 0 },
      crdColumn('Display Name', 'string', '.spec.displayName'),
      { name: 'Keys', type: 'integer', format: '', description: 'The number of keys in the secret data.', priority: 0 },
      crdColumn('Age', 'date', '.metadata.creationTimestamp'),
    ]);
  });

  test('Cluster: Name and the CRD columns', () => {
    expect(clusters.columnDefinitions.map((c) => [c.name, c.type])).toEqual([
      ['Name', 'string'],
      ['Display Name', 'string'],
      ['Local', 'boolean'],
      ['Unusable', 'boolean'],
      ['Phase', 'string'],
      ['Online', 'boolean'],
      ['Last Check', 'date'],
      ['Age', 'date'],
    ]);
    expect(clusters.columnDefinitions[2]).toEqual(crdColumn('Local', 'boolean', '.spec.local'));
  });

  test('the Name description is ObjectMeta’s', () => {
    expect(NAME_DESCRIPTION).toMatch(
      /^Name must be unique within a namespace\. .* More info: https:\/\/kubernetes\.io\/docs\/concepts\/overview\/working-with-objects\/names#names$/,
    );
  });

  test('a CRD without printer columns gets an Age column', () => {
    const conv = new TableConvertor({ printerColumns: [] });
    expect(conv.columnDefinitions).toEqual([
      { name: 'Name', type: 'string', format: 'name', description: NAME_DESCRIPTION, priority: 0 },
      { name: 'Age', type: 'date', format: '', description: CREATION_TIMESTAMP_DESCRIPTION, priority: 0 },
    ]);
  });

  test('CRD description, format and priority are kept', () => {
    const conv = new TableConvertor({
      printerColumns: [
        {
          name: 'Owner',
          type: 'string',
          jsonPath: '.spec.owner.user',
          description: 'Who owns it',
          format: 'email',
          priority: 1,
        },
      ],
    });
    expect(conv.columnDefinitions[1]).toEqual({
      name: 'Owner',
      type: 'string',
      format: 'email',
      description: 'Who owns it',
      priority: 1,
    });
  });

  test('computed columns go before the column they name, else at the end', () => {
    const conv = new TableConvertor(clusterDef, {
      printerColumns: [
        { name: 'A', type: 'string', description: 'a', cell: () => 'a', before: 'Local' },
        { name: 'B', type: 'string', description: 'b', cell: () => 'b' },
        { name: 'C', type: 'string', description: 'c', cell: () => 'c', before: 'Nope', priority: 1 },
      ],
    });
    expect(conv.columnDefinitions.map((c) => c.name)).toEqual([
      'Name',
      'Display Name',
      'A',
      'Local',
      'Unusable',
      'Phase',
      'Online',
      'Last Check',
      'B',
      'Age',
      'C',
    ]);
    expect(conv.columnDefinitions[10]).toEqual({
      name: 'C',
      type: 'string',
      format: '',
      description: 'c',
      priority: 1,
    });
  });
});

describe('cells', () => {
  test('SharedSecret rows: name, display name, key count, age', () => {
    expect(
      secrets.cells(secret('a', ago(5 * MINUTE), { displayName: 'DB', data: { u: 'eA==', p: 'eQ==' } }), NOW),
    ).toEqual(['a', 'DB', 2, '5m']);
    expect(secrets.cells(secret('b', ago(3 * HOUR)), NOW)).toEqual(['b', null, 0, '3h']);
    expect(secrets.cells(secret('c', ago(2 * DAY), { data: {} }), new Date(NOW))).toEqual(['c', null, 0, '2d']);
  });

  test('Cluster rows: booleans, missing values are null', () => {
    expect(
      clusters.cells(
        cluster('prod', ago(45 * SECOND), { displayName: 'Production', local: true, unusable: false }),
        NOW,
      ),
    ).toEqual(['prod', 'Production', true, false, null, null, null, '45s']);
    expect(clusters.cells(cluster('edge', ago(400 * DAY)), NOW)).toEqual([
      'edge',
      null,
      null,
      null,
      null,
      null,
      null,
      '400d',
    ]);
    const checked = {
      ...cluster('ok', ago(45 * SECOND)),
      status: { phase: 'Initialized', online: true, lastCheckTime: ago(5 * SECOND) },
    };
    expect(clusters.cells(checked, NOW)).toEqual(['ok', null, null, null, 'Initialized', true, '5s', '45s']);
  });

  test.each([
    [ago(1 * SECOND), '1s'],
    [ago(119 * SECOND), '119s'],
    [ago(2 * MINUTE), '2m'],
    [ago(7 * MINUTE + 30 * SECOND), '7m30s'],
    [ago(179 * MINUTE), '179m'],
    [ago(2 * HOUR + 5 * MINUTE), '125m'], // minutes up to 3h
    [ago(3 * HOUR + 5 * MINUTE), '3h5m'],
    [ago(47 * HOUR), '47h'],
    [ago(3 * DAY + 4 * HOUR), '3d4h'],
    [ago(800 * DAY), '2y70d'],
    ['2025-05-01T10:00:01Z', '0s'], // up to 2s in the future is "now"
    ['2025-05-01T10:00:05Z', '<invalid>'],
    ['2025-05-01T09:55:00.5+00:00', '4m59s'],
    ['2025-05-01T11:55:00+02:00', '5m'],
    ['yesterday', '<invalid>'],
    ['2025-02-30T00:00:00Z', '<invalid>'],
    ['2025-05-01 09:55:00Z', '<invalid>'],
    ['', '<unknown>'],
  ])('Age of %j is %j', (created, age) => {
    expect(secrets.cells(secret('x', created), NOW)[3]).toBe(age);
  });

  test('Age of a missing creationTimestamp is null', () => {
    const obj = secret('x', '');
    delete obj.metadata.creationTimestamp;
    expect(secrets.cells(obj, NOW)[3]).toBeNull();
  });

  test('values are converted by column type', () => {
    const conv = new TableConvertor({
      printerColumns: [
        { name: 'S', type: 'string', jsonPath: '.v' },
        { name: 'I', type: 'integer', jsonPath: '.v' },
        { name: 'N', type: 'number', jsonPath: '.v' },
        { name: 'B', type: 'boolean', jsonPath: '.v' },
        { name: 'D', type: 'date', jsonPath: '.v' },
      ],
    });
    const row = (v: unknown) => conv.cells({ metadata: { name: 'n' }, v } as KubeObject, NOW).slice(1);
    expect(row('2025-05-01T09:00:00Z')).toEqual(['2025-05-01T09:00:00Z', null, null, null, '60m']);
    expect(row(7)).toEqual(['7', 7, 7, null, null]);
    expect(row(-2.7)).toEqual(['-2.7', -2, -2.7, null, null]);
    expect(row(1234567.5)).toEqual(['1.2345675e+06', 1234567, 1234567.5, null, null]);
    expect(row(0.00001)).toEqual(['1e-05', 0, 0.00001, null, null]);
    expect(row(true)).toEqual(['true', null, null, true, null]);
    expect(row({ b: 1, a: '<x>' })).toEqual(['{"a":"\\u003cx\\u003e","b":1}', null, null, null, null]);
    expect(row(['a', 1])).toEqual(['["a",1]', null, null, null, null]);
    expect(row(null)).toEqual(['<no value>', null, null, null, null]);
    expect(conv.cells({ metadata: { name: 'n' } }, NOW)).toEqual(['n', null, null, null, null, null]);
  });

  test('computed cells are converted like JSONPath results', () => {
    const conv = new TableConvertor(
      { printerColumns: [] },
      {
        printerColumns: [
          { name: 'Count', type: 'integer', description: '', cell: () => 2.9 },
          { name: 'Seen', type: 'date', description: '', cell: () => '2025-05-01T07:00:00Z' },
          { name: 'Gone', type: 'string', description: '', cell: () => undefined },
        ],
      },
    );
    expect(conv.cells({ metadata: { name: 'n', creationTimestamp: ago(DAY) } }, NOW)).toEqual([
      'n',
      2,
      '3h',
      null,
      '24h',
    ]);
  });
});

describe('tables', () => {
  const list = {
    apiVersion: 'management.platform.sh/v1',
    kind: 'SharedSecretList',
    metadata: { resourceVersion: '812', continue: 'tok', remainingItemCount: 3 },
    items: [secret('a', ago(5 * MINUTE), { displayName: 'A', data: { k: 'dg==' } }), secret('b', ago(3 * HOUR))],
  };

  test('a list: kind, apiVersion, list metadata, one row per item with PartialObjectMetadata', () => {
    const table = secrets.listTable(list, { now: NOW });
    expect(table).toEqual({
      kind: 'Table',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { resourceVersion: '812', continue: 'tok', remainingItemCount: 3 },
      columnDefinitions: secrets.columnDefinitions,
      rows: [
        {
          cells: ['a', 'A', 1, '5m'],
          object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: list.items[0].metadata },
        },
        {
          cells: ['b', null, 0, '3h'],
          object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: list.items[1].metadata },
        },
      ],
    });
    // the row metadata is a copy, not the stored object's
    expect((table.rows[0].object as any).metadata).not.toBe(list.items[0].metadata);
    // it survives a JSON round trip unchanged
    expect(JSON.parse(JSON.stringify(table))).toEqual(table);
  });

  test('only set list metadata is copied; an empty list has rows: []', () => {
    const table = clusters.listTable({ metadata: { resourceVersion: '5', continue: '' }, items: [] }, { now: NOW });
    expect(table.metadata).toEqual({ resourceVersion: '5' });
    expect(table.rows).toEqual([]);
    expect(clusters.listTable({ metadata: { remainingItemCount: 0 }, items: [] }).metadata).toEqual({
      remainingItemCount: 0,
    });
  });

  test('includeObject=None gives null objects, Object the whole object', () => {
    expect(secrets.listTable(list, { now: NOW, includeObject: 'None' }).rows.map((r) => r.object)).toEqual([
      null,
      null,
    ]);
    expect(secrets.listTable(list, { now: NOW, includeObject: 'Object' }).rows.map((r) => r.object)).toEqual(
      list.items,
    );
    expect(secrets.listTable(list, { now: NOW, includeObject: 'Metadata' }).rows[1].object).toEqual(
      partialObjectMetadata(list.items[1]),
    );
  });

  test('includeObject=Object fills in apiVersion and kind when an object lacks them', () => {
    const obj = secret('x', ago(MINUTE));
    delete obj.apiVersion;
    delete obj.kind;
    expect(secrets.objectTable(obj, { includeObject: 'Object' }).rows[0].object).toMatchObject({
      apiVersion: 'management.platform.sh/v1',
      kind: 'SharedSecret',
      metadata: { name: 'x' },
    });
  });

  test('v1beta1 differs only in apiVersion, rows included', () => {
    const v1 = secrets.listTable(list, { now: NOW });
    const beta = secrets.listTable(list, { now: NOW, version: 'v1beta1' });
    expect(beta.apiVersion).toBe('meta.k8s.io/v1beta1');
    expect(beta.rows[0].object).toMatchObject({ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1beta1' });
    expect({ ...beta, apiVersion: v1.apiVersion, rows: v1.rows }).toEqual(v1);
  });

  test('a single object: one row, the object’s resourceVersion', () => {
    const obj = cluster('prod', ago(2 * DAY), { local: true });
    expect(clusters.objectTable(obj, { now: NOW })).toEqual({
      kind: 'Table',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { resourceVersion: '900' },
      columnDefinitions: clusters.columnDefinitions,
      rows: [{ cells: ['prod', null, true, null, null, null, null, '2d'], object: partialObjectMetadata(obj) }],
    });
  });

  test('watch events: column definitions only on the first', () => {
    const obj = cluster('prod', ago(HOUR));
    const first = clusters.watchEventTable(obj, true, { now: NOW });
    const later = clusters.watchEventTable(obj, false, { now: NOW, includeObject: 'None' });
    expect(first.columnDefinitions).toEqual(clusters.columnDefinitions);
    expect(first.rows).toEqual([
      { cells: ['prod', null, null, null, null, null, null, '60m'], object: partialObjectMetadata(obj) },
    ]);
    expect(first.metadata).toEqual({ resourceVersion: '900' });
    expect(later.columnDefinitions).toBeNull();
    expect(JSON.stringify(later)).toContain('"columnDefinitions":null');
    expect(later.rows).toEqual([{ cells: ['prod', null, null, null, null, null, null, '60m'], object: null }]);
  });

  test('column definitions in a Table are copies', () => {
    const table = secrets.objectTable(secret('a', ago(MINUTE)));
    table.columnDefinitions![0].name = 'changed';
    expect(secrets.columnDefinitions[0].name).toBe('Name');
  });
});

describe('includeObject parameter', () => {
  test.each([
    [undefined, 'Metadata'],
    [null, 'Metadata'],
    ['', 'Metadata'],
    ['Metadata', 'Metadata'],
    ['None', 'None'],
    ['Object', 'Object'],
    [['None', 'bogus'], 'None'],
    [[], 'Metadata'],
  ])('%j is %j', (value, expected) => {
    expect(parseIncludeObject(value as any)).toBe(expected);
  });

  test.each(['none', 'Everything', 'object '])('%j is a 400', (value) => {
    let err: unknown;
    try {
      parseIncludeObject(value);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StatusError);
    expect((err as StatusError).status).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `Unable to convert to Table as requested: includeObject: Invalid value: "${value}": must be 'Metadata', 'Object', 'None', or empty`,
      reason: 'BadRequest',
      code: 400,
    });
  });
});

describe('PartialObjectMetadata', () => {
  test('one object: all of its metadata', () => {
    const obj = secret('a', ago(MINUTE), { data: { k: 'dg==' } });
    expect(partialObjectMetadata(obj)).toEqual({
      kind: 'PartialObjectMetadata',
      apiVersion: 'meta.k8s.io/v1',
      metadata: obj.metadata,
    });
    expect(partialObjectMetadata(obj, 'v1beta1').apiVersion).toBe('meta.k8s.io/v1beta1');
  });

  test('a list: list metadata and items', () => {
    const a = cluster('a', ago(MINUTE));
    const b = cluster('b', ago(MINUTE));
    expect(partialObjectMetadataList({ metadata: { resourceVersion: '7', continue: 'c' }, items: [a, b] })).toEqual({
      kind: 'PartialObjectMetadataList',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { resourceVersion: '7', continue: 'c' },
      items: [
        { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: a.metadata },
        { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: b.metadata },
      ],
    });
    expect(partialObjectMetadataList({ metadata: {}, items: [] })).toEqual({
      kind: 'PartialObjectMetadataList',
      apiVersion: 'meta.k8s.io/v1',
      metadata: {},
      items: [],
    });
  });
});

describe('helpers', () => {
  test.each([
    [-3 * SECOND, '<invalid>'],
    [-2 * SECOND, '<invalid>'],
    [-1999, '0s'],
    [0, '0s'],
    [59 * SECOND, '59s'],
    [5 * MINUTE, '5m'],
    [9 * MINUTE + 59 * SECOND, '9m59s'],
    [10 * MINUTE + 30 * SECOND, '10m'],
    [3 * HOUR, '3h'],
    [7 * HOUR + 59 * MINUTE, '7h59m'],
    [8 * HOUR + 30 * MINUTE, '8h'],
    [2 * DAY, '2d'],
    [7 * DAY + 23 * HOUR, '7d23h'],
    [8 * DAY, '8d'],
    [729 * DAY, '729d'],
    [730 * DAY, '2y'],
    [365 * 8 * DAY, '8y'],
    [365 * 20 * DAY + 100 * DAY, '20y'],
  ])('humanDuration(%j) is %j', (ms, text) => {
    expect(humanDuration(ms)).toBe(text);
  });

  test('dates are read as Go reads RFC 3339 (test/unit/golang.test.ts checks it against Go)', () => {
    const ms = (text: string) => goTimeMillis(parseRFC3339(text)!);
    expect(ms('2025-05-01T10:00:00Z')).toBe(NOW);
    expect(ms('2025-05-01T12:30:00+02:30')).toBe(NOW);
    expect(ms('2025-05-01T10:00:00.999999999Z')).toBe(NOW + 999);
    expect(ms('2024-02-29T00:00:00Z')).toBe(Date.parse('2024-02-29T00:00:00Z'));
    // Go's laxness: a one-digit hour and a comma before the fraction.
    expect(ms('2025-05-01T9:00:00,5Z')).toBe(NOW - HOUR + 500);
    for (const bad of [
      '2025-02-29T00:00:00Z',
      '2025-05-01T24:00:00Z',
      '2025-05-01T10:00:00',
      '2025-05-01t10:00:00z',
      '2025-05-01T10:00:00+2:00',
    ]) {
      expect(parseRFC3339(bad)).toBeUndefined();
    }
  });

  test('compileJSONPath', () => {
    const obj = { a: { b: [{ c: 1 }, { c: 2 }], 'x.y': 'dotted', n: null } };
    expect(compileJSONPath('.a.b[0].c')(obj)).toEqual({ found: true, value: 1 });
    expect(compileJSONPath('.a.b[-1].c')(obj)).toEqual({ found: true, value: 2 });
    expect(compileJSONPath(".a['x.y']")(obj)).toEqual({ found: true, value: 'dotted' });
    expect(compileJSONPath('{.a["x.y"]}')(obj)).toEqual({ found: true, value: 'dotted' });
    expect(compileJSONPath('.a.n')(obj)).toEqual({ found: true, value: null });
    expect(compileJSONPath('.a.b[2].c')(obj)).toEqual({ found: false });
    expect(compileJSONPath('.a.missing.c')(obj)).toEqual({ found: false });
    expect(compileJSONPath('.a.b.c')(obj)).toEqual({ found: false });
    expect(compileJSONPath('.a[0]')(obj)).toEqual({ found: false });
    expect(compileJSONPath('.toString')(obj)).toEqual({ found: false });
    expect(() => compileJSONPath('a.b')).toThrow('unrecognized column definition "a.b"');
    expect(() => compileJSONPath('.a[*]')).toThrow();
    expect(() => compileJSONPath('.a..b')).toThrow();
  });

  test('every definition loaded from crds/ compiles', () => {
    for (const def of definitions as ResourceDefinition[]) {
      expect(() => new TableConvertor(def, strategies[def.kind])).not.toThrow();
    }
  });
});
