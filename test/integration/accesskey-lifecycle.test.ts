/**
 * An access key's life, as its holders see it (issue 43): status.expirationTimestamp, the EXPIRES column of kubectl, a
 * Warning on every answer in the last tenth of its life, and --access-key-max-ttl for keys written outside
 * system:masters. One server for the file, real etcd, the real kubectl.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Config } from '../../src/config.js';
import { humanDuration } from '../../src/apimachinery/duration.js';
import { KEY_SHOWN_ONCE_WARNING } from '../../src/kinds/ownedaccesskey/strategy.js';
import { API_VERSION, GROUP, MERGE_PATCH, uniq } from '../support/fixtures.js';
import { GROUP_PATH, type HttpClient, warningsOf as warnings } from '../support/http.js';
import { kubectlOn, lines, writeUserlessKubeconfig } from '../support/kubectl.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait.js';

const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
const MAX_TTL = 3600;

let ts: TestServer & { as: Record<'root' | 'alice', HttpClient> };
let admin: HttpClient;
let etcd: Etcd3;
let kubeconfig: string;
const { k: kubectl } = kubectlOn(() => kubeconfig);
/** kubectl as the admin (the kubeconfig's token is not known to the token file). */
const k = (...args: string[]) => kubectl('--token', admin.token!, ...args);

const keyPath = (name: string) => `${KEYS}/${name}`;
const keyBody = (name: string, spec: Record<string, unknown> = {}) => ({
  apiVersion: API_VERSION,
  kind: 'OwnedAccessKey',
  metadata: { name },
  spec,
});
/** RFC 3339 with whole seconds, as the server writes times. */
const rfc3339 = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
async function createKey(client: HttpClient, name: string, spec: Record<string, unknown> = {}) {
  const res = await client.post(KEYS, keyBody(name, spec));
  expect(res.status).toBe(201);
  return { res, key: res.body.spec.key as string, body: res.body };
}

async function getKey(name: string): Promise<any> {
  const res = await admin.get(keyPath(name));
  expect(res.status).toBe(200);
  return res.body;
}

/** Rewrites the key as stored in etcd (a key stored long ago, or by an earlier version), and waits until it reads so. */
async function rewriteStored(name: string, change: (stored: any) => void): Promise<void> {
  const path = `${ts.config.etcdPrefix}/${GROUP}/ownedaccesskeys/${name}`;
  const stored = JSON.parse((await etcd.get(path).string())!);
  change(stored);
  const put = await etcd.put(path).value(JSON.stringify(stored)).exec();
  // The key's use may be recorded after the rewrite (a status write of its own): then it is read at a later version.
  await waitFor('the rewritten key to be read', async () => {
    const read = await getKey(name);
    return (
      Number(read.metadata.resourceVersion) >= Number(put.header.revision) &&
      read.metadata.creationTimestamp === stored.metadata.creationTimestamp
    );
  });
}

/** The EXPIRES cell of `kubectl get ownedaccesskey <name>`, with the times just before and after kubectl ran. */
async function expiresCell(name: string): Promise<{ cell: string; before: number; after: number }> {
  const before = Date.now();
  const res = await k('get', 'ownedaccesskey', name);
  const after = Date.now();
  expect(res).toMatchObject({ code: 0, stderr: '' });
  const [header, row] = lines(res.stdout);
  const at = header.indexOf('EXPIRES');
  expect(at).toBeGreaterThan(0);
  return {
    cell: row
      .slice(at)
      .split(/\s{2,}/)[0]
      .trim(),
    before,
    after,
  };
}

/** What kubectl could show for a key expiring at `expires`, asked between `before` and `after`. */
function cellsBetween(expires: number, before: number, after: number): string[] {
  const cells = new Set<string>();
  for (let t = before - 1000; t <= after + 1000; t += 250) cells.add(humanDuration(expires - t));
  return [...cells];
}

beforeAll(async () => {
  ts = await startTestServerWithUsers({ root: ['system:masters'], alice: [] }, {
    accessKeyMaxTtlSeconds: MAX_TTL,
    // A short interval lets lastActivity show up within a test.
    accessKeyActivityMinIntervalMs: 200,
    accessKeyActivityTickMs: 50,
  } as Partial<Config>);
  etcd = new Etcd3({ hosts: ts.etcd.endpoint });
  admin = ts.as.root;
  // The server writes no admin kubeconfig with a token file: one with no user, each call giving its --token.
  kubeconfig = writeUserlessKubeconfig(join(mkdtempSync(join(tmpdir(), 'lifecycle-')), 'kubeconfig'), ts.server);
}, 120_000);

afterAll(async () => {
  etcd?.close();
  await ts?.stop();
  if (kubeconfig) rmSync(dirname(kubeconfig), { recursive: true, force: true });
}, 60_000);

describe('when a key expires, shown', () => {
  test('a key with ttl 120 has status.expirationTimestamp two minutes after its creation, and kubectl shows EXPIRES about 2m', async () => {
    const name = uniq('ttl120');
    const { body } = await createKey(admin, name, { user: 'alice', ttl: 120 });
    const expires = Date.parse(body.metadata.creationTimestamp) + 120_000;
    expect(body.status.expirationTimestamp).toBe(rfc3339(expires));
    expect((await getKey(name)).status.expirationTimestamp).toBe(rfc3339(expires));
    const { cell, before, after } = await expiresCell(name);
    expect(cellsBetween(expires, before, after)).toContain(cell);
    expect(cell).toMatch(/^(2m|1[0-1]\ds)$/);
  });

  test('a key without a ttl has no expirationTimestamp, and EXPIRES is empty', async () => {
    const name = uniq('forever');
    const { body } = await createKey(admin, name, { user: 'alice' });
    expect(body.status?.expirationTimestamp).toBeUndefined();
    expect((await expiresCell(name)).cell).toBe('');
  });

  test('with ttlAfterLastActivity the time moves with each use: ttl after the recorded last activity', async () => {
    const name = uniq('idle');
    const { key, body } = await createKey(admin, name, { user: 'alice', ttl: 600, ttlAfterLastActivity: true });
    const created = Date.parse(body.metadata.creationTimestamp);
    await rewriteStored(name, (stored) => {
      stored.metadata.creationTimestamp = rfc3339(created - 300_000);
      stored.status = { expirationTimestamp: rfc3339(created + 300_000) };
    });
    expect((await ts.client(key).get(keyPath(name))).status).toBe(200);
    const read = await waitFor('the use to be recorded', async () => {
      const got = await getKey(name);
      return got.status?.lastActivity && got;
    });
    expect(read.status.expirationTimestamp).toBe(rfc3339(Date.parse(read.status.lastActivity) + 600_000));
  });

  test('a key stored before expirationTimestamp existed reads with it, on get and list', async () => {
    const name = uniq('older');
    const { body } = await createKey(admin, name, { user: 'alice', ttl: 900 });
    await rewriteStored(name, (stored) => delete stored.status);
    const expires = rfc3339(Date.parse(body.metadata.creationTimestamp) + 900_000);
    expect((await getKey(name)).status).toEqual({ expirationTimestamp: expires });
    const list = await admin.get(KEYS);
    expect(list.body.items.find((i: any) => i.metadata.name === name).status).toEqual({ expirationTimestamp: expires });
  });

  test("expirationTimestamp is the server's: a status write of another time keeps the server's, a wrong type is 422 and changes nothing", async () => {
    const name = uniq('statuswrite');
    const { body } = await createKey(admin, name, { user: 'alice', ttl: 120 });
    const expires = body.status.expirationTimestamp;
    const later = await admin.patch(
      `${keyPath(name)}/status`,
      { status: { expirationTimestamp: '2099-01-01T00:00:00Z' } },
      MERGE_PATCH,
    );
    expect(later.status).toBe(200);
    expect(later.body.status.expirationTimestamp).toBe(expires);
    const wrong = await admin.patch(`${keyPath(name)}/status`, { status: { expirationTimestamp: 5 } }, MERGE_PATCH);
    expect(wrong.status).toBe(422);
    expect(wrong.body).toMatchObject({ kind: 'Status', reason: 'Invalid', code: 422 });
    expect(wrong.body.details.causes[0].field).toBe('status.expirationTimestamp');
    const read = await getKey(name);
    expect(read.status.expirationTimestamp).toBe(expires);
    expect(read.metadata.resourceVersion).toBe(later.body.metadata.resourceVersion);
  });
});

describe('near its end, a key warns', () => {
  test('in the last tenth of its life every answer carries a Warning saying when it expires; kubectl prints it', async () => {
    const name = uniq('ending');
    const { key, body } = await createKey(admin, name, { user: 'alice', ttl: 120 });
    const young = await ts.client(key).get(keyPath(name));
    expect(young.status).toBe(200);
    expect(warnings(young)).toEqual([]);
    // As if created 110 s ago: 10 s left of 120, within the last tenth.
    const created = Date.parse(body.metadata.creationTimestamp) - 110_000;
    await rewriteStored(name, (stored) => {
      stored.metadata.creationTimestamp = rfc3339(created);
      stored.status = { expirationTimestamp: rfc3339(created + 120_000) };
    });
    const old = await ts.client(key).get(keyPath(name));
    expect(old.status).toBe(200);
    const [said] = warnings(old);
    expect(said).toMatch(
      new RegExp(
        `^access key "${name}" expires at ${rfc3339(created + 120_000)} \\(in \\d+s\\); requests with it are refused from then on$`,
      ),
    );
    expect(said).not.toContain(key);
    const res = await kubectl('--token', key, 'get', 'ownedaccesskey', name);
    expect(res.code).toBe(0);
    expect(res.stderr).toContain(`Warning: access key "${name}" expires at ${rfc3339(created + 120_000)}`);
    expect(res.stderr).not.toContain(key);
  });

  test('once past it, EXPIRES says expired and the key is 401', async () => {
    const name = uniq('ended');
    const { key, body } = await createKey(admin, name, { user: 'alice', ttl: 120 });
    const created = Date.parse(body.metadata.creationTimestamp) - 200_000;
    await rewriteStored(name, (stored) => {
      stored.metadata.creationTimestamp = rfc3339(created);
      stored.status = { expirationTimestamp: rfc3339(created + 120_000) };
    });
    expect((await expiresCell(name)).cell).toBe('expired');
    const res = await ts.client(key).get(keyPath(name));
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/expired/);
  });
});

describe('--access-key-max-ttl', () => {
  const capped = (asked: string) =>
    `spec.ttl: set to ${MAX_TTL} (60m), the longest life this server gives access keys outside system:masters (--access-key-max-ttl); ${asked} was asked for`;

  test("a user's key without a ttl, or a longer one, gets the maximum, and the answer says so", async () => {
    for (const [spec, asked] of [
      [{}, 'none'],
      [{ ttl: 0 }, 'none'],
      [{ ttl: 7200 }, '7200'],
    ] as const) {
      const name = uniq('capped');
      const { res } = await createKey(ts.as.alice, name, spec);
      expect(res.body.spec.ttl).toBe(MAX_TTL);
      expect(warnings(res)).toEqual([KEY_SHOWN_ONCE_WARNING, capped(asked)]);
      expect((await getKey(name)).spec.ttl).toBe(MAX_TTL);
    }
  });

  test("a user's shorter ttl is kept, without a warning", async () => {
    const { res } = await createKey(ts.as.alice, uniq('short'), { ttl: 60 });
    expect(res.body.spec.ttl).toBe(60);
    expect(warnings(res)).toEqual([KEY_SHOWN_ONCE_WARNING]);
  });

  test("an admin's key is not held to it", async () => {
    const forever = await createKey(admin, uniq('admin-forever'), { user: 'alice' });
    expect(forever.res.body.spec.ttl).toBeUndefined();
    const long = await createKey(admin, uniq('admin-long'), { user: 'alice', ttl: 86400 });
    expect(long.res.body.spec.ttl).toBe(86400);
    expect(warnings(long.res)).toEqual([KEY_SHOWN_ONCE_WARNING]);
  });

  test('a key an admin made without a ttl, changed by its holder, gets the maximum then (kubectl shows the warning)', async () => {
    const name = uniq('changed');
    const { key } = await createKey(admin, name, { user: 'alice' });
    // alice, with that very key: a holder's write, not an admin's.
    const res = await k(
      '--token',
      key,
      'patch',
      'ownedaccesskey',
      name,
      '--type',
      'merge',
      '-p',
      '{"spec":{"description":"ci"}}',
    );
    expect(res.code).toBe(0);
    expect(res.stderr).toContain(`Warning: ${capped('none')}`);
    const read = await getKey(name);
    expect(read.spec).toMatchObject({ description: 'ci', ttl: MAX_TTL });
    expect(read.status.expirationTimestamp).toBe(rfc3339(Date.parse(read.metadata.creationTimestamp) + MAX_TTL * 1000));
  });

  test('a negative ttl is still 422 naming spec.ttl, and nothing is stored', async () => {
    const name = uniq('negative');
    const res = await ts.as.alice.post(KEYS, keyBody(name, { ttl: -5 }));
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ kind: 'Status', reason: 'Invalid' });
    expect(res.body.details.causes.map((c: any) => c.field)).toContain('spec.ttl');
    expect((await admin.get(keyPath(name))).status).toBe(404);
  });
});
