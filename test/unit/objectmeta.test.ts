import { describe, expect, test } from '@jest/globals';
import { errorString, Path, type FieldError } from '../../src/apimachinery/field.js';
import { goTimeString, validateObjectMeta, validateObjectMetaUpdate } from '../../src/apimachinery/objectmeta.js';
import type { ObjectMeta } from '../../src/apimachinery/types.js';
import { nameIsDNSLabel, nameIsDNSSubdomain } from '../../src/apimachinery/validation.js';

const SUBDOMAIN_MSG =
  "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const QNAME_REGEX_MSG =
  "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG =
  "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

const namespaced = { namespaced: true, nameFn: nameIsDNSSubdomain };
const clusterScoped = { namespaced: false, nameFn: nameIsDNSSubdomain };
const strings = (errs: FieldError[]) => errs.map(errorString);
const good: ObjectMeta = { name: 'foo', namespace: 'default' };

describe('validateObjectMeta: good input', () => {
  test.each<[string, ObjectMeta]>([
    ['minimal', good],
    ['generateName with trailing dash', { generateName: 'foo-', name: 'foo-x7k2p', namespace: 'default' }],
    ['subdomain name', { name: 'a.b-c.d', namespace: 'team-1' }],
    ['253-char name', { name: 'a'.repeat(253), namespace: 'default' }],
    [
      'labels',
      {
        ...good,
        labels: { app: 'web', 'example.com/tier': 'Front_End.1', empty: '', ['k'.repeat(63)]: 'v'.repeat(63) },
      },
    ],
    ['annotations', { ...good, annotations: { 'Example.COM/Some-Key': 'anything at all: {"json": true}', UPPER: '' } }],
    ['annotations at the size limit', { ...good, annotations: { k: 'x'.repeat(262144 - 1) } }],
    [
      'owner references',
      {
        ...good,
        ownerReferences: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'u1', controller: true },
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            name: 'd',
            uid: 'u2',
            controller: false,
            blockOwnerDeletion: true,
          },
        ],
      },
    ],
    ['finalizers', { ...good, finalizers: ['orphan', 'example.com/cleanup', 'kubernetes'] }],
    [
      'managed fields',
      {
        ...good,
        managedFields: [
          {
            manager: 'kubectl-client-side-apply',
            operation: 'Update',
            apiVersion: 'v1',
            fieldsType: 'FieldsV1',
            fieldsV1: {},
          },
          { manager: 'kubectl', operation: 'Apply', subresource: 'status' },
        ],
      },
    ],
    ['generation 0', { ...good, generation: 0 }],
  ])('%s', (_name, meta) => {
    expect(validateObjectMeta(meta, namespaced)).toEqual([]);
  });

  test('cluster-scoped without namespace', () => {
    expect(validateObjectMeta({ name: 'foo' }, clusterScoped)).toEqual([]);
  });
});

describe('validateObjectMeta: bad input', () => {
  test.each<[string, ObjectMeta, typeof namespaced, string[]]>([
    [
      'no name',
      { namespace: 'default' },
      namespaced,
      ['metadata.name: Required value: name or generateName is required'],
    ],
    [
      'uppercase name',
      { name: 'Foo', namespace: 'default' },
      namespaced,
      [`metadata.name: Invalid value: "Foo": ${SUBDOMAIN_MSG}`],
    ],
    [
      '254-char name',
      { name: 'a'.repeat(254), namespace: 'default' },
      namespaced,
      [`metadata.name: Invalid value: "${'a'.repeat(254)}": must be no more than 253 characters`],
    ],
    [
      'label-named resource with dots',
      { name: 'a.b', namespace: 'default' },
      { namespaced: true, nameFn: nameIsDNSLabel },
      ['metadata.name: Invalid value: "a.b": must not contain dots'],
    ],
    [
      'bad generateName and name',
      { generateName: 'Foo-', name: 'Foo-abcde', namespace: 'default' },
      namespaced,
      [
        `metadata.generateName: Invalid value: "Foo-": ${SUBDOMAIN_MSG}`,
        `metadata.name: Invalid value: "Foo-abcde": ${SUBDOMAIN_MSG}`,
      ],
    ],
    ['namespaced without namespace', { name: 'foo' }, namespaced, ['metadata.namespace: Required value']],
    [
      'namespace with dots',
      { name: 'foo', namespace: 'a.b' },
      namespaced,
      ['metadata.namespace: Invalid value: "a.b": must not contain dots'],
    ],
    [
      'cluster-scoped with namespace',
      { name: 'foo', namespace: 'default' },
      clusterScoped,
      ['metadata.namespace: Forbidden: not allowed on this type'],
    ],
    [
      'negative generation',
      { ...good, generation: -1 },
      namespaced,
      ['metadata.generation: Invalid value: -1: must be greater than or equal to 0'],
    ],
    [
      'bad label key and value',
      { ...good, labels: { 'bad key': 'bad value', ok: '-x' } },
      namespaced,
      [
        `metadata.labels: Invalid value: "bad key": name part ${QNAME_REGEX_MSG}`,
        `metadata.labels: Invalid value: "bad value": ${LABEL_VALUE_MSG}`,
        `metadata.labels: Invalid value: "-x": ${LABEL_VALUE_MSG}`,
      ],
    ],
    [
      '64-char label key and value',
      { ...good, labels: { ['k'.repeat(64)]: 'v'.repeat(64) } },
      namespaced,
      [
        `metadata.labels: Invalid value: "${'k'.repeat(64)}": name part must be no more than 63 characters`,
        `metadata.labels: Invalid value: "${'v'.repeat(64)}": must be no more than 63 characters`,
      ],
    ],
    [
      'bad annotation key (each message its own error, original case shown)',
      { ...good, annotations: { 'Bad_Prefix/Key': 'v', 'a/b/c': 'v' } },
      namespaced,
      [
        `metadata.annotations: Invalid value: "Bad_Prefix/Key": prefix part ${SUBDOMAIN_MSG}`,
        `metadata.annotations: Invalid value: "a/b/c": a qualified name ${QNAME_REGEX_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
      ],
    ],
    [
      'annotations one byte over the limit',
      { ...good, annotations: { k: 'x'.repeat(262144) } },
      namespaced,
      ['metadata.annotations: Too long: may not be more than 262144 bytes'],
    ],
    [
      'annotation size counts UTF-8 bytes',
      { ...good, annotations: { k: 'é'.repeat(131072) } },
      namespaced,
      ['metadata.annotations: Too long: may not be more than 262144 bytes'],
    ],
    [
      'empty owner reference fields (no index in the path)',
      { ...good, ownerReferences: [{ apiVersion: '', kind: '', name: '', uid: '' }] },
      namespaced,
      [
        'metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
        'metadata.ownerReferences.kind: Invalid value: "": kind must not be empty',
        'metadata.ownerReferences.name: Invalid value: "": name must not be empty',
        'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty',
      ],
    ],
    [
      'owner apiVersion without a version',
      { ...good, ownerReferences: [{ apiVersion: 'apps/', kind: 'Deployment', name: 'd', uid: 'u' }] },
      namespaced,
      ['metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty'],
    ],
    [
      'an Event owner',
      { ...good, ownerReferences: [{ apiVersion: 'v1', kind: 'Event', name: 'e', uid: 'u' }] },
      namespaced,
      [
        'metadata.ownerReferences: Invalid value: {"apiVersion":"v1","kind":"Event","name":"e","uid":"u"}: /v1, Kind=Event is disallowed from being an owner',
      ],
    ],
    [
      'bad finalizer',
      { ...good, finalizers: ['example.com/ok', 'Bad Name'] },
      namespaced,
      [`metadata.finalizers: Invalid value: "Bad Name": name part ${QNAME_REGEX_MSG}`],
    ],
    [
      'orphan and foregroundDeletion together',
      { ...good, finalizers: ['orphan', 'foregroundDeletion'] },
      namespaced,
      [
        'metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan and foregroundDeletion cannot be both set',
      ],
    ],
    [
      'managed fields',
      {
        ...good,
        managedFields: [
          { manager: 'ok', operation: 'Update' },
          { manager: 'm'.repeat(129), operation: 'Patch', fieldsType: 'FieldsV2', subresource: 's'.repeat(257) },
          { manager: 'tab\there' },
        ],
      },
      namespaced,
      [
        'metadata.managedFields[1].operation: Invalid value: "Patch": must be `Apply` or `Update`',
        'metadata.managedFields[1].fieldsType: Invalid value: "FieldsV2": must be `FieldsV1`',
        'metadata.managedFields[1].manager: Too long: may not be more than 128 bytes',
        'metadata.managedFields[1].subresource: Too long: may not be more than 256 bytes',
        'metadata.managedFields[2].operation: Invalid value: "": must be `Apply` or `Update`',
        'metadata.managedFields[2].manager: Invalid value: "tab\\there": invalid character U+0009 (at position 3)',
      ],
    ],
  ])('%s', (_name, meta, opts, expected) => {
    expect(strings(validateObjectMeta(meta, opts))).toEqual(expected);
  });

  test('two controller owner references', () => {
    const errs = validateObjectMeta(
      {
        ...good,
        ownerReferences: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'a', uid: 'u1', controller: true },
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            name: 'b',
            uid: 'u2',
            controller: true,
            blockOwnerDeletion: false,
          },
        ],
      },
      namespaced,
    );
    expect(errs).toHaveLength(1);
    expect(errs[0].type).toBe('FieldValueInvalid');
    expect(errs[0].field).toBe('metadata.ownerReferences');
    expect(errs[0].detail).toBe(
      'Only one reference can have Controller set to true. Found "true" in references for ConfigMap/a and Deployment/b',
    );
    // The list prints as JSON (1.33's %#v of it would show Go heap addresses).
    expect(errorString(errs[0])).toBe(
      'metadata.ownerReferences: Invalid value: [{"apiVersion":"v1","kind":"ConfigMap","name":"a","uid":"u1","controller":true},' +
        '{"apiVersion":"apps/v1","kind":"Deployment","name":"b","uid":"u2","controller":true,"blockOwnerDeletion":false}]' +
        ': Only one reference can have Controller set to true. Found "true" in references for ConfigMap/a and Deployment/b',
    );
  });

  test('three controllers: one error per extra controller, all naming the first', () => {
    const refs = ['a', 'b', 'c'].map((n) => ({ apiVersion: 'v1', kind: 'K', name: n, uid: n, controller: true }));
    const details = validateObjectMeta({ ...good, ownerReferences: refs }, namespaced).map((e) => e.detail);
    expect(details).toEqual([
      'Only one reference can have Controller set to true. Found "true" in references for K/a and K/b',
      'Only one reference can have Controller set to true. Found "true" in references for K/a and K/c',
    ]);
  });

  test('errors come in Go order and honour a custom root path', () => {
    const errs = validateObjectMeta(
      { name: 'X', namespace: 'default', generation: -1, labels: { 'a b': 'c' }, finalizers: ['a b'] },
      clusterScoped,
      Path.root('spec').child('template').child('metadata'),
    );
    expect(errs.map((e) => e.field)).toEqual([
      'spec.template.metadata.name',
      'spec.template.metadata.namespace',
      'spec.template.metadata.generation',
      'spec.template.metadata.labels',
      'spec.template.metadata.finalizers',
    ]);
  });
});

describe('validateObjectMetaUpdate', () => {
  const old: ObjectMeta = {
    name: 'foo',
    namespace: 'default',
    uid: '6d2f0c52-0000-4000-8000-000000000001',
    resourceVersion: '5',
    generation: 3,
    creationTimestamp: '2024-01-02T03:04:05Z',
    labels: { app: 'web' },
  };

  test('an unchanged object is fine (no resourceVersion check here)', () => {
    expect(validateObjectMetaUpdate({ ...old, resourceVersion: undefined }, old)).toEqual([]);
    expect(validateObjectMetaUpdate({ ...old, generation: 4, labels: { app: 'api' } }, old)).toEqual([]);
  });

  test('the same instant written differently is not a change', () => {
    expect(validateObjectMetaUpdate({ ...old, creationTimestamp: '2024-01-02T04:04:05+01:00' }, old)).toEqual([]);
  });

  test.each<[string, ObjectMeta, ObjectMeta, string[]]>([
    ['rename', { ...old, name: 'bar' }, old, ['metadata.name: Invalid value: "bar": field is immutable']],
    [
      'move namespace',
      { ...old, namespace: 'other' },
      old,
      ['metadata.namespace: Invalid value: "other": field is immutable'],
    ],
    [
      'drop namespace',
      { ...old, namespace: undefined },
      old,
      ['metadata.namespace: Invalid value: "": field is immutable'],
    ],
    ['change uid', { ...old, uid: 'x' }, old, ['metadata.uid: Invalid value: "x": field is immutable']],
    [
      'decrement generation',
      { ...old, generation: 2 },
      old,
      ['metadata.generation: Invalid value: 2: must not be decremented'],
    ],
    [
      'change creationTimestamp',
      { ...old, creationTimestamp: '2025-06-07T08:09:10Z' },
      old,
      ['metadata.creationTimestamp: Invalid value: 2025-06-07 08:09:10 +0000 UTC: field is immutable'],
    ],
    [
      'drop creationTimestamp (zero time)',
      { ...old, creationTimestamp: null },
      old,
      ['metadata.creationTimestamp: Invalid value: 0001-01-01 00:00:00 +0000 UTC: field is immutable'],
    ],
    [
      'set deletionTimestamp',
      { ...old, deletionTimestamp: '2024-05-06T07:08:09Z' },
      old,
      ['metadata.deletionTimestamp: Invalid value: 2024-05-06 07:08:09 +0000 UTC: field is immutable'],
    ],
    [
      'clear deletionTimestamp',
      { ...old, deletionTimestamp: undefined },
      { ...old, deletionTimestamp: '2024-05-06T07:08:09Z' },
      ['metadata.deletionTimestamp: Invalid value: "null": field is immutable'],
    ],
    [
      'change deletionGracePeriodSeconds',
      { ...old, deletionGracePeriodSeconds: 30 },
      { ...old, deletionGracePeriodSeconds: 0 },
      ['metadata.deletionGracePeriodSeconds: Invalid value: 30: field is immutable'],
    ],
    [
      'clear deletionGracePeriodSeconds',
      { ...old },
      { ...old, deletionGracePeriodSeconds: 0 },
      ['metadata.deletionGracePeriodSeconds: Invalid value: "null": field is immutable'],
    ],
    [
      'new finalizers while being deleted (sorted, %#v)',
      { ...old, deletionTimestamp: '2024-05-06T07:08:09Z', finalizers: ['keep', 'z.io/new', 'a.io/new'] },
      { ...old, deletionTimestamp: '2024-05-06T07:08:09Z', finalizers: ['keep'] },
      [
        'metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"a.io/new", "z.io/new"}',
      ],
    ],
    [
      'bad labels on the new object',
      { ...old, labels: { app: 'Web Server' } },
      old,
      [`metadata.labels: Invalid value: "Web Server": ${LABEL_VALUE_MSG}`],
    ],
    [
      'oversized annotations on the new object',
      { ...old, annotations: { big: 'x'.repeat(262142) } },
      old,
      ['metadata.annotations: Too long: may not be more than 262144 bytes'],
    ],
  ])('%s', (_name, newMeta, oldMeta, expected) => {
    expect(strings(validateObjectMetaUpdate(newMeta, oldMeta))).toEqual(expected);
  });

  test('finalizers may be removed, and added when not being deleted', () => {
    const deleting = { ...old, deletionTimestamp: '2024-05-06T07:08:09Z', finalizers: ['a', 'b'] };
    expect(validateObjectMetaUpdate({ ...deleting, finalizers: ['b'] }, deleting)).toEqual([]);
    expect(validateObjectMetaUpdate({ ...old, finalizers: ['new'] }, old)).toEqual([]);
  });

  test('several problems come in Go order', () => {
    const deleting = { ...old, deletionTimestamp: '2024-05-06T07:08:09Z' };
    const errs = validateObjectMetaUpdate(
      { ...deleting, name: 'x', generation: 1, finalizers: ['f'], uid: 'y' },
      deleting,
    );
    expect(errs.map((e) => e.field)).toEqual([
      'metadata.finalizers',
      'metadata.generation',
      'metadata.name',
      'metadata.uid',
    ]);
  });
});

describe('goTimeString', () => {
  test.each<[string | null | undefined, string]>([
    ['2024-01-02T03:04:05Z', '2024-01-02 03:04:05 +0000 UTC'],
    ['2024-01-02T03:04:05.500Z', '2024-01-02 03:04:05.5 +0000 UTC'],
    ['2024-01-02T03:04:05.123456789Z', '2024-01-02 03:04:05.123456789 +0000 UTC'],
    ['2024-01-02T00:30:00+01:00', '2024-01-01 23:30:00 +0000 UTC'],
    [null, '0001-01-01 00:00:00 +0000 UTC'],
    [undefined, '0001-01-01 00:00:00 +0000 UTC'],
  ])('%j', (value, expected) => {
    expect(goTimeString(value)).toBe(expected);
  });
});
