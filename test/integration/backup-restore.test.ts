/**
 * Backup and restore end to end, with real processes as an admin runs them (docs/operating.md, "Backup and restore"): servers
 * (`node dist/main.js`) with encryption at rest, `snapshot save` while one serves, `snapshot restore` (etcdctl) or
 * etcdctl itself into a fresh etcd, and a server on the restored data. It serves the same objects with the same
 * resourceVersions, decrypts them with the keys kept apart from the snapshot, and access keys still authenticate;
 * what was written after the snapshot is gone, and a watch from a resourceVersion of that lost history is 410 Gone
 * (the client lists again), as kube's watchers get after a restore.
 *
 * Two ways: the embedded default (its etcd under --data-dir; the commands of docs/operating.md), and an etcd of one's own
 * (--etcd-servers, as the chart's or an external one). `snapshot save` writes a file of its own, 0600, whatever is
 * already at its name or its temporary name: never through a symlink there.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { Etcd3 } from 'etcd3';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runningEmbeddedEtcd, startEmbeddedEtcd, type EmbeddedEtcd } from '../../src/storage/embedded-etcd.js';
import { startTestEtcd, startTlsEtcd, type TestEtcd } from '../support/etcd.js';
import { API_VERSION, secretBody, sharedSecretPath, sharedSecretsPath, uniq } from '../support/fixtures.js';
import { GROUP_PATH } from '../support/http.js';
import { startServerProcess, type ServerProcess } from '../support/serverprocess.js';
import { runToCompletion, type ToolResult } from '../support/tools.js';
import { openWatch } from '../support/watch.js';

const ADMIN_TOKEN = 'backup-admin-token-0123456789abcdef';
const KEYS = `${GROUP_PATH}/ownedaccesskeys`;
/** The server writes a key's use on its next activity tick (every 5 s): a bound far above that on a busy machine. */
const ACTIVITY_WRITTEN_MS = 60_000;
/** Writes after the snapshot: the lost history runs this far past the restored store's revision. */
const WRITES_AFTER_SNAPSHOT = 200;

let dir: string;
let tokenFile: string;
const running: { stop(): Promise<void> }[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'backup-restore-'));
  tokenFile = join(dir, 'tokens.csv');
  writeFileSync(tokenFile, `${ADMIN_TOKEN},admin,uid-admin,"system:masters"\n`, { mode: 0o600 });
});

afterAll(async () => {
  for (const r of running.splice(0).reverse()) await r.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

async function server(opts: { dataDir: string; etcdEndpoint?: string; args?: string[] }): Promise<ServerProcess> {
  const s = await startServerProcess({ tokenAuthFile: tokenFile, ...opts });
  running.push(s);
  return s;
}

/** `node dist/main.js snapshot ...`, as docs/operating.md has it. */
function snapshotCommand(args: string[]): Promise<ToolResult> {
  return runToCompletion(process.execPath, [resolve('dist/main.js'), 'snapshot', ...args], {
    env: process.env,
    timeoutMs: 60_000,
    what: 'snapshot',
  });
}

function etcdctl(args: string[]): Promise<ToolResult> {
  return runToCompletion('etcdctl', args, {
    env: { ...process.env, ETCDCTL_API: '3' },
    timeoutMs: 60_000,
    what: 'etcdctl',
  });
}

interface Before {
  ns: string;
  secret: any;
  key: { name: string; token: string; body: any };
  jwks: any;
  /** An object written after the snapshot, and the resourceVersion a client last saw. */
  late: { name: string; resourceVersion: string };
}

/** Objects a restore must bring back: a SharedSecret (encrypted data) and an access key (encrypted connectorData). */
async function writeObjects(s: ServerProcess): Promise<Omit<Before, 'late'>> {
  const admin = s.client(ADMIN_TOKEN);
  const ns = 'default';
  const created = await admin.post(sharedSecretsPath(ns), secretBody(uniq('kept')));
  expect(created.status).toBe(201);
  const name = uniq('key');
  const key = await admin.post(KEYS, {
    apiVersion: API_VERSION,
    kind: 'OwnedAccessKey',
    metadata: { name },
    spec: { user: 'alice', identity: { connectorData: 'Y29ubmVjdG9yLXNlY3JldA==' } },
  });
  expect(key.status).toBe(201);
  const token = key.body.spec.key as string;
  // The key's use is written to its status.lastActivity in the background, seconds later (src/auth/activity.ts):
  // the key remembered is the one after that write, which the snapshot holds whenever it is taken.
  const keyChanges = await openWatch(
    admin,
    `${KEYS}?fieldSelector=metadata.name=${name}&resourceVersion=${key.body.metadata.resourceVersion}`,
  );
  expect((await s.client(token).get(`${KEYS}/${name}`)).status).toBe(200);
  await keyChanges.find(
    (e) => e.type === 'MODIFIED' && e.object.status?.lastActivity !== undefined,
    'the use of the key written to its status.lastActivity',
    ACTIVITY_WRITTEN_MS,
  );
  keyChanges.close();
  const keyBody = (await admin.get(`${KEYS}/${name}`)).body;
  const jwks = (await s.client('').get('/openid/v1/jwks')).body;
  expect(jwks.keys.length).toBeGreaterThan(0);
  return { ns, secret: created.body, key: { name, token, body: keyBody }, jwks };
}

/** After the snapshot: many writes (etcd's revision moves well past the snapshot's), then one object a client sees. */
async function writeAfterSnapshot(s: ServerProcess, etcdEndpoint: string, ns: string): Promise<Before['late']> {
  const kv = new Etcd3({ hosts: etcdEndpoint });
  try {
    for (let i = 0; i < WRITES_AFTER_SNAPSHOT; i++) await kv.put('/not-the-server/after-snapshot').value(String(i));
  } finally {
    kv.close();
  }
  const late = await s.client(ADMIN_TOKEN).post(sharedSecretsPath(ns), secretBody(uniq('lost')));
  expect(late.status).toBe(201);
  return { name: late.body.metadata.name, resourceVersion: late.body.metadata.resourceVersion };
}

/** What the restored server must serve: the same objects, versions and keys; not what came after the snapshot. */
async function expectRestored(s: ServerProcess, before: Before): Promise<void> {
  const admin = s.client(ADMIN_TOKEN);
  const secret = await admin.get(sharedSecretPath(before.ns, before.secret.metadata.name));
  expect(secret.status).toBe(200);
  expect(secret.body).toEqual(before.secret);
  expect(secret.body.spec.data).toEqual({ token: 'c2VjcmV0' });

  const key = await admin.get(`${KEYS}/${before.key.name}`);
  expect(key.status).toBe(200);
  expect(key.body.metadata.resourceVersion).toBe(before.key.body.metadata.resourceVersion);
  expect(key.body.metadata.uid).toBe(before.key.body.metadata.uid);
  // The key authenticates: its owner reads it with it.
  expect((await s.client(before.key.token).get(`${KEYS}/${before.key.name}`)).status).toBe(200);
  // The token signing keys (stored encrypted) are the same: tokens issued before still verify.
  expect((await s.client('').get('/openid/v1/jwks')).body).toEqual(before.jwks);

  expect((await admin.get(sharedSecretPath(before.ns, before.late.name))).status).toBe(404);

  // A client that watched before the restore comes back with the last resourceVersion it saw: 410, list again.
  const w = await openWatch(admin, `${sharedSecretsPath(before.ns)}?resourceVersion=${before.late.resourceVersion}`);
  expect(w.status).toBe(200);
  await w.end();
  expect(w.events).toEqual([
    {
      type: 'ERROR',
      object: expect.objectContaining({ kind: 'Status', code: 410, reason: 'Expired' }),
    },
  ]);
  // Listing again and watching from the list works.
  const list = await admin.get(sharedSecretsPath(before.ns));
  expect(list.status).toBe(200);
  expect(list.body.items.map((i: any) => i.metadata.name)).toContain(before.secret.metadata.name);
  const again = await openWatch(
    admin,
    `${sharedSecretsPath(before.ns)}?resourceVersion=${list.body.metadata.resourceVersion}`,
  );
  expect(again.status).toBe(200);
  const next = await admin.post(sharedSecretsPath(before.ns), secretBody(uniq('after-restore')));
  expect(next.status).toBe(201);
  const event = await again.find((e) => e.object?.metadata?.name === next.body.metadata.name);
  expect(event.type).toBe('ADDED');
  again.close();
}

describe('the embedded default', () => {
  test('snapshot save while the server runs; snapshot restore into a new data dir with the kept keys; a server on it serves the same objects', async () => {
    const original = join(dir, 'embedded');
    const s = await server({ dataDir: original });
    const objects = await writeObjects(s);
    const etcdEndpoint = await runningEmbeddedEtcd(original);
    expect(etcdEndpoint).toBeDefined();

    const snapshot = join(dir, 'embedded.db');
    const save = await snapshotCommand(['save', snapshot, `--data-dir=${original}`]);
    expect({ code: save.code, stderr: save.stderr }).toEqual({ code: 0, stderr: '' });
    expect(save.stdout).toMatch(/^snapshot saved: .*embedded\.db \(\d+ bytes/);
    // The keys are not in the snapshot: they are kept apart, as docs/operating.md says.
    const keys = readFileSync(join(original, 'encryption-config.yaml'));
    const secretKey = /secret: (\S+)/.exec(keys.toString())![1];
    expect(readFileSync(snapshot).includes(secretKey)).toBe(false);
    writeFileSync(join(dir, 'embedded-keys.yaml'), keys, { mode: 0o600 });

    const late = await writeAfterSnapshot(s, etcdEndpoint!, objects.ns);
    await s.stop();

    // With no server running, the same command starts the data dir's etcd for the save (and stops it).
    const stopped = await snapshotCommand(['save', join(dir, 'embedded-stopped.db'), `--data-dir=${original}`]);
    expect({ code: stopped.code, stderr: stopped.stderr }).toEqual({ code: 0, stderr: '' });
    expect(await runningEmbeddedEtcd(original)).toBeUndefined();
    const status = JSON.parse(
      (await etcdctl(['snapshot', 'status', join(dir, 'embedded-stopped.db'), '-w', 'json'])).stdout,
    );
    expect(status.revision).toBeGreaterThanOrEqual(Number(late.resourceVersion));

    // Restoring over a server's data is refused; so is a restore without the keys.
    const over = await snapshotCommand([
      'restore',
      snapshot,
      `--data-dir=${original}`,
      `--encryption-provider-config=${join(dir, 'embedded-keys.yaml')}`,
    ]);
    expect(over.code).toBe(1);
    expect(over.stderr).toMatch(/exists: restore into a new --data-dir/);
    const restored = join(dir, 'embedded-restored');
    const noKeys = await snapshotCommand(['restore', snapshot, `--data-dir=${restored}`]);
    expect(noKeys.code).toBe(2);
    expect(noKeys.stderr).toMatch(/needs --encryption-provider-config/);
    expect(existsSync(join(restored, 'etcd'))).toBe(false);

    const restore = await snapshotCommand([
      'restore',
      snapshot,
      `--data-dir=${restored}`,
      `--encryption-provider-config=${join(dir, 'embedded-keys.yaml')}`,
    ]);
    expect({ code: restore.code, stderr: restore.stderr }).toEqual({ code: 0, stderr: '' });
    const r = await server({ dataDir: restored });
    await expectRestored(r, { ...objects, late });
    await r.stop();
  }, 180_000);
});

describe('an etcd that speaks only TLS with client certificates (as the chart’s)', () => {
  test('snapshot save with --etcd-cafile, --etcd-certfile and --etcd-keyfile; a certificate of another CA is refused and leaves no file', async () => {
    const etcd = await startTlsEtcd();
    running.push(etcd);
    const file = join(dir, 'tls.db');
    const tls = [`--etcd-servers=${etcd.endpoint}`, `--etcd-cafile=${etcd.files.ca}`];
    const rogue = await snapshotCommand([
      'save',
      file,
      ...tls,
      `--etcd-certfile=${etcd.rogue.cert}`,
      `--etcd-keyfile=${etcd.rogue.key}`,
    ]);
    expect(rogue.code).toBe(1);
    expect(rogue.stderr).toMatch(/^error: no snapshot saved: /m);
    expect(existsSync(file) || existsSync(`${file}.partial`)).toBe(false);
    const save = await snapshotCommand([
      'save',
      file,
      ...tls,
      `--etcd-certfile=${etcd.files.cert}`,
      `--etcd-keyfile=${etcd.files.key}`,
    ]);
    // (Node warns, DEP0123, that an IP address is no TLS server name: etcd here is at 127.0.0.1.)
    expect({ code: save.code, error: /error/i.test(save.stderr) }).toEqual({ code: 0, error: false });
    expect(save.stdout).toMatch(/^snapshot saved: /);
    expect((await etcdctl(['snapshot', 'status', file])).code).toBe(0);
  }, 60_000);
});

describe('an etcd of its own (--etcd-servers, as the chart)', () => {
  let etcd: TestEtcd;
  let restoredEtcd: EmbeddedEtcd | undefined;

  beforeAll(async () => {
    etcd = await startTestEtcd();
    running.push(etcd);
  });
  afterAll(async () => {
    await restoredEtcd?.stop();
  });

  test('snapshot save writes a file of its own, 0600: never through a symlink at <file>.partial or <file>, never keeping a stale partial’s mode', async () => {
    const outside = join(dir, 'outside.txt');
    const text = 'not the snapshot’s to overwrite';
    writeFileSync(outside, text);
    chmodSync(outside, 0o644);
    // (Its first bytes only: a snapshot written over it would fill the report.)
    const expectOutsideUntouched = () =>
      expect({
        start: readFileSync(outside, 'utf8').slice(0, text.length),
        bytes: lstatSync(outside).size,
        mode: lstatSync(outside).mode & 0o777,
      }).toEqual({ start: text, bytes: Buffer.byteLength(text), mode: 0o644 });
    const save = async (file: string) => {
      const saved = await snapshotCommand(['save', file, `--etcd-servers=${etcd.endpoint}`]);
      expect({ code: saved.code, stderr: saved.stderr }).toEqual({ code: 0, stderr: '' });
      expectOutsideUntouched();
      expect((await etcdctl(['snapshot', 'status', file])).code).toBe(0);
      // The snapshot is a file of its own (not a link to one elsewhere), 0600; its temporary name is gone.
      const stat = lstatSync(file);
      expect({ file: stat.isFile(), mode: stat.mode & 0o777 }).toEqual({ file: true, mode: 0o600 });
      expect(lstatSync(`${file}.partial`, { throwIfNoEntry: false })).toBeUndefined();
    };

    // A symlink at the temporary name (planted, or left by a crashed save): removed, its target untouched.
    const planted = join(dir, 'planted.db');
    symlinkSync(outside, `${planted}.partial`);
    await save(planted);

    // A crashed save's partial file, 0644: made anew, so the snapshot does not keep its mode.
    const stale = join(dir, 'stale.db');
    writeFileSync(`${stale}.partial`, 'half a snapshot');
    chmodSync(`${stale}.partial`, 0o644);
    await save(stale);

    // A symlink at the file's own name: the rename replaces the link, not what it points to.
    const linked = join(dir, 'linked.db');
    symlinkSync(outside, linked);
    await save(linked);

    // Anything else at the temporary name is not a stale partial: left alone, and the save says why it stopped.
    const blocked = join(dir, 'blocked.db');
    mkdirSync(`${blocked}.partial`);
    writeFileSync(join(`${blocked}.partial`, 'kept.txt'), 'kept');
    const refused = await snapshotCommand(['save', blocked, `--etcd-servers=${etcd.endpoint}`]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `error: no snapshot saved: ${blocked}.partial exists and is not a file: remove it, or save the snapshot elsewhere`,
    );
    expect(readFileSync(join(`${blocked}.partial`, 'kept.txt'), 'utf8')).toBe('kept');
    expect(existsSync(blocked)).toBe(false);
  }, 120_000);

  test('snapshot save --dir keeps the newest; etcdctl snapshot restore makes a fresh etcd; a server on it with the same EncryptionConfiguration', async () => {
    const encryption = join(dir, 'encryption.yaml');
    writeFileSync(
      encryption,
      [
        'apiVersion: apiserver.config.k8s.io/v1',
        'kind: EncryptionConfiguration',
        'resources:',
        '  - resources: ["*.management.platform.sh"]',
        '    providers:',
        '      - aescbc:',
        '          keys:',
        `            - {name: key1, secret: ${randomBytes(32).toString('base64')}}`,
        '      - identity: {}',
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    const args = [`--encryption-provider-config=${encryption}`];
    const s = await server({ dataDir: join(dir, 'external-a'), etcdEndpoint: etcd.endpoint, args });
    const objects = await writeObjects(s);

    // The chart's CronJob: --dir and --keep, against --etcd-servers.
    const backups = join(dir, 'backups');
    rmSync(backups, { recursive: true, force: true });
    mkdirSync(backups);
    writeFileSync(join(backups, 'not-a-snapshot.txt'), 'left alone');
    const saved: string[] = [];
    for (let i = 0; i < 3; i++) {
      const save = await snapshotCommand(['save', `--dir=${backups}`, '--keep=2', `--etcd-servers=${etcd.endpoint}`]);
      expect({ code: save.code, stderr: save.stderr }).toEqual({ code: 0, stderr: '' });
      saved.push(/^snapshot saved: (\S+)/.exec(save.stdout)![1]);
      expect(saved[i]).toMatch(/\/etcd-snapshot-\d{8}T\d{6}\.\d{3}Z\.db$/);
    }
    expect(new Set(saved).size).toBe(3);
    expect(readdirSync(backups).sort()).toEqual(
      [...saved.slice(1).map((f) => f.slice(backups.length + 1)), 'not-a-snapshot.txt'].sort(),
    );

    const late = await writeAfterSnapshot(s, etcd.endpoint, objects.ns);
    await s.stop();

    // docs/operating.md's procedure for an etcd of one's own: etcdctl into a new data dir, a fresh etcd on it.
    const snapshot = saved[2];
    const status = await etcdctl(['snapshot', 'status', snapshot, '-w', 'json']);
    expect(status.code).toBe(0);
    const restoredDir = join(dir, 'restored-etcd');
    const restore = await etcdctl([
      'snapshot',
      'restore',
      snapshot,
      `--data-dir=${join(restoredDir, 'etcd')}`,
      '--name=default',
      '--initial-cluster=default=http://127.0.0.1:2380',
      '--initial-advertise-peer-urls=http://127.0.0.1:2380',
    ]);
    expect(restore.code).toBe(0);
    restoredEtcd = await startEmbeddedEtcd({ dataDir: restoredDir, unsafeNoFsync: true });
    const r = await server({ dataDir: join(dir, 'external-b'), etcdEndpoint: restoredEtcd.endpoints[0], args });
    await expectRestored(r, { ...objects, late });
    await r.stop();
  }, 180_000);
});
