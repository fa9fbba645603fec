/**
 * Validation of SharedSecret and Cluster as a client meets it: a 422 Invalid Status with one cause per bad
 * field (field path and reason), unknown fields pruned (a "__proto__" field as any other), and nothing stored after
 * a refused request.
 */
import { describe, test, expect } from '@jest/globals';
import type { TestServer } from '../support/server.js';
import type { HttpResponse } from '../support/http.js';
import {
  API_VERSION,
  CLUSTERS_PATH,
  GROUP,
  JSON_PATCH,
  MERGE_PATCH,
  clusterPath,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
  useServerWithPeek,
  type EtcdPeek,
} from '../support/fixtures.js';

const NS = 'validation';

let ts: TestServer;
let peek: EtcdPeek;

useServerWithPeek((env) => ({ ts, peek } = env));

const secrets = (ns = NS) => sharedSecretsPath(ns);
const secret = (name: string, ns = NS) => sharedSecretPath(ns, name);

interface Cause {
  reason: string;
  field: string;
  message: string;
}

/** A 422 Invalid Status for `kind` and `name`; returns its causes. */
function expectInvalid(res: HttpResponse, kind: 'SharedSecret' | 'Cluster', name: string): Cause[] {
  expect({ status: res.status, body: res.body }).toMatchObject({
    status: 422,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      code: 422,
      reason: 'Invalid',
      details: { group: GROUP, kind },
    },
  });
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.body.message.startsWith(`${kind}.${GROUP} "${name}" is invalid: `)).toBe(true);
  if (name) expect(res.body.details.name).toBe(name);
  const causes: Cause[] = res.body.details.causes ?? [];
  // Every cause is also in the message, as "<field>: <cause message>".
  for (const c of causes) expect(res.body.message).toContain(`${c.field}: ${c.message}`);
  return causes;
}

/** The (field, reason) pairs of the causes, sorted, for exact comparison. */
function fieldsAndReasons(causes: Cause[]): string[] {
  return causes.map((c) => `${c.field} ${c.reason}`).sort();
}

async function expectNoSecret(name: string, ns = NS): Promise<void> {
  expect((await ts.admin.get(secret(name, ns))).status).toBe(404);
  expect(await peek.entry(peek.sharedSecretKey(ns, name))).toBeUndefined();
}

async function expectNoCluster(name: string): Promise<void> {
  expect((await ts.admin.get(clusterPath(name))).status).toBe(404);
  expect(await peek.entry(peek.clusterKey(name))).toBeUndefined();
}

function secretBody(
  name: string,
  spec: Record<string, unknown> = {},
  metadata: Record<string, unknown> = {},
): Record<string, any> {
  return {
    apiVersion: API_VERSION,
    kind: 'SharedSecret',
    metadata: { name, ...metadata },
    spec: { displayName: name, ...spec },
  };
}

function clusterBody(
  name: string,
  spec: Record<string, unknown> = {},
  metadata: Record<string, unknown> = {},
): Record<string, any> {
  return { apiVersion: API_VERSION, kind: 'Cluster', metadata: { name, ...metadata }, spec };
}

describe('SharedSecret data', () => {
  test.each([
    ['a key with a space', 'bad key', 'dmFsdWU='],
    ["the key '..'", '..', 'dmFsdWU='],
  ])('%s is refused with one cause at spec.data[<key>]', async (_what, key, value) => {
    const name = uniq('datakey');
    const res = await ts.admin.post(secrets(), secretBody(name, { data: { good: 'Z29vZA==', [key]: value } }));
    const causes = expectInvalid(res, 'SharedSecret', name);
    expect(fieldsAndReasons(causes)).toEqual([`spec.data[${key}] FieldValueInvalid`]);
    expect(causes[0].message).toContain(`Invalid value: ${JSON.stringify(key)}`);
    await expectNoSecret(name);
  });

  test('a value that is not base64 is refused at spec.data[<key>]', async () => {
    const name = uniq('datavalue');
    const res = await ts.admin.post(secrets(), secretBody(name, { data: { k: '!!notbase64', good: 'Z29vZA==' } }));
    const causes = expectInvalid(res, 'SharedSecret', name);
    expect(fieldsAndReasons(causes)).toEqual(['spec.data[k] FieldValueInvalid']);
    // Named base64, and the value (secret data, maybe pasted in clear) is not echoed.
    expect(causes[0].message).toBe(
      'Invalid value: "string": spec.data[k] in body must be of type byte: a base64 string (RFC 4648, padded), e.g. "aGVsbG8=" for "hello"',
    );
    expect(JSON.stringify(res.body)).not.toContain('notbase64');
    await expectNoSecret(name);
  });

  test('bad keys and a bad value in one request are all reported together, one cause each', async () => {
    const name = uniq('dataall');
    const res = await ts.admin.post(
      secrets(),
      secretBody(name, { data: { 'bad key': 'dmFsdWU=', '..': 'dmFsdWU=', k: '!!notbase64', fine: 'ZmluZQ==' } }),
    );
    const causes = expectInvalid(res, 'SharedSecret', name);
    expect(fieldsAndReasons(causes)).toEqual([
      'spec.data[..] FieldValueInvalid',
      'spec.data[bad key] FieldValueInvalid',
      'spec.data[k] FieldValueInvalid',
    ]);
    expect(res.body.message).toMatch(/ is invalid: \[.*\]$/);
    await expectNoSecret(name);
  });

  test('a bad data key sent by PUT to an existing secret is refused and the stored secret is unchanged', async () => {
    const name = uniq('data-update');
    const created = await ts.admin.post(secrets(), secretBody(name, { data: { ok: 'b2s=' } }));
    expect(created.status).toBe(201);
    const res = await ts.admin.put(secret(name), {
      ...created.body,
      spec: { data: { ok: 'b2s=', 'no good': 'b2s=' } },
    });
    const causes = expectInvalid(res, 'SharedSecret', name);
    expect(fieldsAndReasons(causes)).toEqual(['spec.data[no good] FieldValueInvalid']);
    expect((await ts.admin.get(secret(name))).body).toEqual(created.body);
    expect((await peek.entry(peek.sharedSecretKey(NS, name)))?.modRevision).toBe(created.body.metadata.resourceVersion);
  });
});

describe('metadata', () => {
  test('a namespace that is not a DNS label is 422 at metadata.namespace', async () => {
    const name = uniq('badns');
    const res = await ts.admin.post(secrets('Bad_NS'), secretBody(name));
    const causes = expectInvalid(res, 'SharedSecret', name);
    expect(fieldsAndReasons(causes)).toEqual(['metadata.namespace FieldValueInvalid']);
    expect(causes[0].message).toContain('Invalid value: "Bad_NS"');
    await expectNoSecret(name, 'Bad_NS');
  });

  test('a name that is not a DNS subdomain (uppercase) is 422 at metadata.name', async () => {
    const name = `Upper-${uniq('case')}`;
    const res = await ts.admin.post(secrets(), secretBody(name));
    const causes = expectInvalid(res, 'SharedSecret', name);
    expect(fieldsAndReasons(causes)).toEqual(['metadata.name FieldValueInvalid']);
    expect(causes[0].message).toContain(`Invalid value: "${name}": a lowercase RFC 1123 subdomain`);
    await expectNoSecret(name);

    const clusterName = `Upper-${uniq('cl')}`;
    const cl = await ts.admin.post(CLUSTERS_PATH, clusterBody(clusterName, { networkPeer: true }));
    expect(fieldsAndReasons(expectInvalid(cl, 'Cluster', clusterName))).toEqual(['metadata.name FieldValueInvalid']);
    await expectNoCluster(clusterName);
  });

  test('no name and no generateName is 422 "name or generateName is required"', async () => {
    const ns = uniq('noname');
    const res = await ts.admin.post(secrets(ns), {
      apiVersion: API_VERSION,
      kind: 'SharedSecret',
      metadata: {},
      spec: { displayName: 'nameless' },
    });
    const causes = expectInvalid(res, 'SharedSecret', '');
    // The CRD has CEL rules, which kube does not run on an object with a missing required field: it says so.
    expect(res.body.message).toBe(
      'SharedSecret.management.platform.sh "" is invalid: [metadata.name: Required value: name or generateName is required, ' +
        '<nil>: Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]',
    );
    expect(causes).toEqual([
      {
        reason: 'FieldValueRequired',
        message: 'Required value: name or generateName is required',
        field: 'metadata.name',
      },
      {
        reason: 'FieldValueInvalid',
        message:
          'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
        field: '<nil>',
      },
    ]);
    expect((await ts.admin.get(secrets(ns))).body.items).toEqual([]);

    const cl = await ts.admin.post(CLUSTERS_PATH, {
      apiVersion: API_VERSION,
      kind: 'Cluster',
      metadata: {},
      spec: { networkPeer: true },
    });
    expect(fieldsAndReasons(expectInvalid(cl, 'Cluster', ''))).toEqual([
      '<nil> FieldValueInvalid',
      'metadata.name FieldValueRequired',
    ]);
  });

  test('bad label key, bad label value and bad annotation key each give a cause', async () => {
    const name = uniq('labels');
    const res = await ts.admin.post(
      secrets(),
      secretBody(
        name,
        {},
        {
          labels: { 'bad key!': 'fine', good: 'bad value!' },
          annotations: { 'bad key!': 'anything goes here', 'example.com/fine': 'x' },
        },
      ),
    );
    const causes = expectInvalid(res, 'SharedSecret', name);
    expect(fieldsAndReasons(causes)).toEqual([
      'metadata.annotations FieldValueInvalid',
      'metadata.labels FieldValueInvalid',
      'metadata.labels FieldValueInvalid',
    ]);
    const labelMessages = causes.filter((c) => c.field === 'metadata.labels').map((c) => c.message);
    expect(labelMessages).toEqual(
      expect.arrayContaining([
        expect.stringContaining('Invalid value: "bad key!"'),
        expect.stringContaining('Invalid value: "bad value!"'),
      ]),
    );
    expect(causes.find((c) => c.field === 'metadata.annotations')?.message).toContain('Invalid value: "bad key!"');
    await expectNoSecret(name);
  });

  test('a bad label added by merge patch is refused and the object is unchanged', async () => {
    const name = uniq('labels-patch');
    const created = await ts.admin.post(secrets(), secretBody(name, {}, { labels: { ok: 'yes' } }));
    expect(created.status).toBe(201);
    const res = await ts.admin.patch(secret(name), { metadata: { labels: { ok: 'no way!' } } }, MERGE_PATCH);
    expect(fieldsAndReasons(expectInvalid(res, 'SharedSecret', name))).toEqual(['metadata.labels FieldValueInvalid']);
    expect((await ts.admin.get(secret(name))).body).toEqual(created.body);
  });
});

describe('access entries', () => {
  test('an entry without verbs, one with verb "GET!" and one without users or teams each give their cause', async () => {
    const name = uniq('access');
    const res = await ts.admin.post(
      secrets(),
      secretBody(name, {
        access: [
          { name: 'no-verbs', users: ['alice'] },
          { name: 'bad-verb', verbs: ['GET!'], users: ['alice'] },
          { name: 'nobody', verbs: ['get'] },
          { name: 'fine', verbs: ['*'], teams: ['ops'] },
        ],
      }),
    );
    const causes = expectInvalid(res, 'SharedSecret', name);
    expect(fieldsAndReasons(causes)).toEqual([
      'spec.access[0].verbs FieldValueRequired',
      'spec.access[1].verbs[0] FieldValueInvalid',
      'spec.access[2].users FieldValueRequired',
    ]);
    expect(causes.find((c) => c.field === 'spec.access[1].verbs[0]')?.message).toContain('Invalid value: "GET!"');
    await expectNoSecret(name);
  });

  test.each([
    ['without verbs', { users: ['bob'] }, 'spec.access[0].verbs FieldValueRequired'],
    ['with verb "GET!"', { verbs: ['GET!'], teams: ['devs'] }, 'spec.access[0].verbs[0] FieldValueInvalid'],
    ['without users or teams', { verbs: ['get', 'list'] }, 'spec.access[0].users FieldValueRequired'],
  ])('a cluster access entry %s is refused', async (_what, entry, expected) => {
    const name = uniq('cl-access');
    const res = await ts.admin.post(CLUSTERS_PATH, clusterBody(name, { networkPeer: true, access: [entry] }));
    expect(fieldsAndReasons(expectInvalid(res, 'Cluster', name))).toEqual([expected]);
    await expectNoCluster(name);
  });

  test('valid access entries are accepted and stored as sent', async () => {
    const name = uniq('access-ok');
    const access = [
      { name: 'readers', verbs: ['get', 'list'], users: ['alice'], teams: ['ops'] },
      { verbs: ['*'], subresources: ['status'], teams: ['admins'] },
    ];
    const res = await ts.admin.post(secrets(), secretBody(name, { access }));
    expect(res.status).toBe(201);
    expect(res.body.spec.access).toEqual(access);
    expect((await peek.entry(peek.sharedSecretKey(NS, name)))?.value.spec.access).toEqual(access);
  });
});

describe('Cluster connection config', () => {
  test('a cluster without spec.config.secretName is 422 at spec.config.secretName', async () => {
    const bare = uniq('cl-bare');
    const res = await ts.admin.post(CLUSTERS_PATH, clusterBody(bare, { displayName: 'no config' }));
    const causes = expectInvalid(res, 'Cluster', bare);
    expect(fieldsAndReasons(causes)).toEqual(['spec.config.secretName FieldValueRequired']);
    await expectNoCluster(bare);

    const onlyNs = uniq('cl-onlyns');
    const res2 = await ts.admin.post(
      CLUSTERS_PATH,
      clusterBody(onlyNs, { config: { secretNamespace: 'platform' }, local: false, networkPeer: false }),
    );
    expect(fieldsAndReasons(expectInvalid(res2, 'Cluster', onlyNs))).toEqual([
      'spec.config.secretName FieldValueRequired',
    ]);
    await expectNoCluster(onlyNs);
  });

  test.each([
    ['spec.local', { local: true }],
    ['spec.networkPeer', { networkPeer: true }],
    ['spec.config.secretName', { config: { secretName: 'kubeconfig' } }],
  ])('a cluster with %s needs nothing more', async (_what, spec) => {
    const name = uniq('cl-ok');
    const res = await ts.admin.post(CLUSTERS_PATH, clusterBody(name, spec));
    expect(res.status).toBe(201);
    expect(res.body.spec).toEqual(spec);
    expect((await ts.admin.get(clusterPath(name))).body).toEqual(res.body);
  });

  test('removing secretName from a non-local cluster by merge patch is refused and the cluster is unchanged', async () => {
    const name = uniq('cl-unset');
    const created = await ts.admin.post(
      CLUSTERS_PATH,
      clusterBody(name, { config: { secretName: 'kubeconfig', secretNamespace: 'platform' } }),
    );
    expect(created.status).toBe(201);
    const res = await ts.admin.patch(clusterPath(name), { spec: { config: { secretName: null } } }, MERGE_PATCH);
    expect(fieldsAndReasons(expectInvalid(res, 'Cluster', name))).toEqual([
      'spec.config.secretName FieldValueRequired',
    ]);
    expect((await ts.admin.get(clusterPath(name))).body).toEqual(created.body);
    expect((await peek.entry(peek.clusterKey(name)))?.modRevision).toBe(created.body.metadata.resourceVersion);
  });
});

describe('types', () => {
  test('spec.local: "yes" is FieldValueTypeInvalid at spec.local', async () => {
    const name = uniq('cl-type');
    const res = await ts.admin.post(CLUSTERS_PATH, clusterBody(name, { local: 'yes' }));
    const causes = expectInvalid(res, 'Cluster', name);
    expect(fieldsAndReasons(causes)).toEqual(['<nil> FieldValueInvalid', 'spec.local FieldValueTypeInvalid']);
    expect(causes[0].message).toContain('boolean');
    expect(causes[1]).toEqual({
      reason: 'FieldValueInvalid',
      field: '<nil>',
      message:
        'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
    });
    await expectNoCluster(name);
  });

  test('wrong types in a SharedSecret (data as a string, verbs as a string) are FieldValueTypeInvalid', async () => {
    const name = uniq('ss-type');
    const res = await ts.admin.post(secrets(), secretBody(name, { data: 'not-a-map' }));
    expect(fieldsAndReasons(expectInvalid(res, 'SharedSecret', name))).toEqual([
      '<nil> FieldValueInvalid',
      'spec.data FieldValueTypeInvalid',
    ]);
    await expectNoSecret(name);

    const res2 = await ts.admin.post(secrets(), secretBody(name, { access: [{ verbs: 'get', users: ['a'] }] }));
    expect(fieldsAndReasons(expectInvalid(res2, 'SharedSecret', name))).toEqual([
      '<nil> FieldValueInvalid',
      'spec.access[0].verbs FieldValueTypeInvalid',
    ]);
    await expectNoSecret(name);
  });
});

describe('unknown fields', () => {
  // Not inside an owner or an access entry: those narrow grants, and refuse unknown fields (fail-closed.test.ts).
  test('are pruned from spec, metadata and the top level; the create succeeds', async () => {
    const name = uniq('prune');
    const body = {
      ...secretBody(name, { bogus: 'x', owner: { user: 'alice' }, data: { k: 'dg==' } }, { bogus: 'y' }),
      bogusTop: { a: 1 },
    };
    const res = await ts.admin.post(secrets(), body);
    expect(res.status).toBe(201);
    expect(res.body.spec).toEqual({ displayName: name, owner: { user: 'alice' }, data: { k: 'dg==' } });
    expect(res.body.metadata).not.toHaveProperty('bogus');
    expect(res.body).not.toHaveProperty('bogusTop');

    const got = await ts.admin.get(secret(name));
    expect(got.body).toEqual(res.body);
    const stored = (await peek.entry(peek.sharedSecretKey(NS, name)))?.value;
    expect(stored.spec).not.toHaveProperty('bogus');
    expect(stored.spec.owner).not.toHaveProperty('bogus');
    expect(stored.metadata).not.toHaveProperty('bogus');
    expect(stored).not.toHaveProperty('bogusTop');
  });

  test('are pruned on update too; a patch of only unknown fields changes nothing', async () => {
    const name = uniq('prune-update');
    const created = await ts.admin.post(CLUSTERS_PATH, clusterBody(name, { networkPeer: true }));
    expect(created.status).toBe(201);
    const res = await ts.admin.put(clusterPath(name), {
      ...created.body,
      spec: { ...created.body.spec, bogus: true, config: { bogus: 'z' } },
    });
    expect(res.status).toBe(200);
    expect(res.body.spec).toEqual({ networkPeer: true, config: {} });
    const stored = (await peek.entry(peek.clusterKey(name)))?.value;
    expect(stored.spec).toEqual({ networkPeer: true, config: {} });

    const patch = await ts.admin.patch(clusterPath(name), { spec: { bogus: 1 }, metadata: { bogus: 2 } }, MERGE_PATCH);
    expect(patch.status).toBe(200);
    expect(patch.body.spec).not.toHaveProperty('bogus');
    expect(patch.body.metadata).not.toHaveProperty('bogus');
    expect(patch.body.metadata.resourceVersion).toBe(res.body.metadata.resourceVersion);
  });

  test('fieldValidation=Strict refuses one a JSON patch value brings, when the patch is tried again too', async () => {
    // An update starts from the cached object and, failing there, is tried again on what etcd holds with the same
    // patch: pruning the first try's result must not have taken the field out of the patch.
    const name = uniq('retry');
    const created = await ts.admin.post(CLUSTERS_PATH, clusterBody(name, { networkPeer: true }));
    expect(created.status).toBe(201);
    const rv = created.body.metadata.resourceVersion;
    expect((await ts.admin.get(`${clusterPath(name)}?resourceVersion=${rv}`)).status).toBe(200);
    const before = await peek.entry(peek.clusterKey(name));
    // "__proto__" as JSON.parse makes it: an own field (an object literal's `__proto__:` would set its prototype).
    for (const field of ['bogus', '__proto__']) {
      const res = await ts.admin.patch(
        `${clusterPath(name)}?fieldValidation=Strict`,
        [{ op: 'add', path: '/spec/config', value: { [field]: {} } }],
        JSON_PATCH,
      );
      expect({ status: res.status, message: res.body.message }).toEqual({
        status: 400,
        message: `Cluster in version "v1" cannot be handled as a Cluster: strict decoding error: unknown field "spec.config.${field}"`,
      });
    }
    expect(await peek.entry(peek.clusterKey(name))).toEqual(before);
  });
});

describe('a "__proto__" field is an unknown field like any other (JSON.parse makes it an own field)', () => {
  /** At the top level, in metadata and in spec, as JSON text (an object literal cannot hold one as plainly). */
  const text = (name: string, extra = '') =>
    `{"apiVersion":"${API_VERSION}","kind":"SharedSecret","__proto__":{"a":1},` +
    `"metadata":{"name":"${name}","__proto__":"x"},` +
    `"spec":{"displayName":"d","data":{"k":"dg=="},"__proto__":{"displayName":"other"}${extra}}}`;
  const unknown = ['metadata.__proto__', '__proto__', 'spec.__proto__'].map((p) => `unknown field "${p}"`);

  async function expectStoredWithout(name: string): Promise<void> {
    const stored = (await peek.entry(peek.sharedSecretKey(NS, name)))?.value;
    expect(stored.spec).toEqual({ displayName: 'd', data: { k: 'dg==' } });
    for (const part of [stored, stored.metadata, stored.spec]) expect(Object.hasOwn(part, '__proto__')).toBe(false);
  }

  test('fieldValidation=Strict: 400 naming each, nothing stored', async () => {
    const name = uniq('proto-strict');
    const res = await ts.admin.post(`${secrets()}?fieldValidation=Strict`, text(name));
    expect({ status: res.status, reason: res.body.reason, message: res.body.message }).toEqual({
      status: 400,
      reason: 'BadRequest',
      message: `SharedSecret in version "v1" cannot be handled as a SharedSecret: strict decoding error: ${unknown.join(', ')}`,
    });
    await expectNoSecret(name);
  });

  test('fieldValidation=Warn, and none (Warn is the default): 201 with a warning for each, stored without them', async () => {
    for (const validation of ['?fieldValidation=Warn', '']) {
      const name = uniq('proto-warn');
      const res = await ts.admin.post(`${secrets()}${validation}`, text(name));
      expect(res.status).toBe(201);
      expect(res.headers.warning).toBe(unknown.map((w) => `299 - ${JSON.stringify(w)}`).join(', '));
      await expectStoredWithout(name);
    }
  });

  test('fieldValidation=Ignore: 201 without a word, stored without them', async () => {
    const name = uniq('proto-ignore');
    const res = await ts.admin.post(`${secrets()}?fieldValidation=Ignore`, text(name));
    expect({ status: res.status, warning: res.headers.warning }).toEqual({ status: 201, warning: undefined });
    await expectStoredWithout(name);
  });

  test('a duplicate "__proto__" is a duplicate field, and an unknown one: Strict 400, Warn warns of both', async () => {
    const strict = uniq('proto-dup');
    const refused = await ts.admin.post(`${secrets()}?fieldValidation=Strict`, text(strict, ',"__proto__":{}'));
    expect({ status: refused.status, message: refused.body.message }).toEqual({
      status: 400,
      message: `SharedSecret in version "v1" cannot be handled as a SharedSecret: strict decoding error: duplicate field "spec.__proto__", ${unknown.join(', ')}`,
    });
    await expectNoSecret(strict);
    const warned = uniq('proto-dup');
    const res = await ts.admin.post(`${secrets()}?fieldValidation=Warn`, text(warned, ',"__proto__":{}'));
    expect(res.status).toBe(201);
    expect(res.headers.warning).toContain('299 - "duplicate field \\"spec.__proto__\\""');
    await expectStoredWithout(warned);
  });
});
