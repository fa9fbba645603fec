import { test, expect, beforeAll, afterAll } from '@jest/globals';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Etcd3 } from 'etcd3';
import { startEmbeddedEtcd } from '../../src/storage/embedded-etcd.js';
import { startTestEtcd } from '../support/etcd.js';
import { alive } from '../support/processes.js';

let tmp: string;

beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'embedded-etcd-test-'));
});

afterAll(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

async function withClient<T>(endpoint: string, fn: (c: Etcd3) => Promise<T>): Promise<T> {
  const client = new Etcd3({ hosts: endpoint });
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

test('data survives a restart on the same data dir', async () => {
  const etcd = await startTestEtcd();
  try {
    await withClient(etcd.endpoint, async (c) => void (await c.put('/registry/test/key').value('kept')));
    await etcd.restart();
    expect(await withClient(etcd.endpoint, (c) => c.get('/registry/test/key').string())).toBe('kept');
    expect(await fs.readFile(path.join(etcd.dataDir, 'etcd.pid'), 'utf8')).toMatch(/^\d+\n$/);
  } finally {
    await etcd.stop();
  }
  await expect(fs.access(etcd.dataDir)).rejects.toThrow();
});

test('stop is idempotent and removes the pid file', async () => {
  const dataDir = path.join(tmp, 'stop-twice');
  const etcd = await startEmbeddedEtcd({ dataDir, unsafeNoFsync: true });
  expect(etcd.endpoints[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  await Promise.all([etcd.stop(), etcd.stop()]);
  await etcd.stop();
  expect(alive(etcd.pid)).toBe(false);
  await expect(fs.access(path.join(dataDir, 'etcd.pid'))).rejects.toThrow();
  expect(await fs.readFile(path.join(dataDir, 'etcd.log'), 'utf8')).toBeDefined();
});

test('a missing binary gives a clear error', async () => {
  const dataDir = path.join(tmp, 'missing');
  await expect(startEmbeddedEtcd({ dataDir, binary: 'etcd-not-installed-here' })).rejects.toThrow(
    'etcd was not found on PATH: install the Debian package etcd-server (apt-get install etcd-server), ' +
      'or point the server at a running etcd with --etcd-servers',
  );
  await expect(startEmbeddedEtcd({ dataDir, binary: '/nonexistent/bin/etcd' })).rejects.toThrow(
    /etcd was not found at \/nonexistent\/bin\/etcd: install the Debian package etcd-server/,
  );
});

test('an etcd that exits during startup is reported with its log', async () => {
  const dataDir = path.join(tmp, 'broken');
  await fs.mkdir(dataDir);
  // etcd cannot use a plain file as its data dir.
  await fs.writeFile(path.join(dataDir, 'etcd'), 'not a directory');
  await expect(startEmbeddedEtcd({ dataDir, unsafeNoFsync: true })).rejects.toThrow(
    /etcd exited during startup with code \d+;[^]*etcd\.log:\n[^]*\S/,
  );
  await expect(fs.access(path.join(dataDir, 'etcd.pid'))).rejects.toThrow();
});

test('a leftover etcd recorded in the pid file is stopped first', async () => {
  const dataDir = path.join(tmp, 'leftover');
  // Stands in for the etcd of a server that was killed with -9: never stopped, pid file left behind.
  const leftover = await startEmbeddedEtcd({ dataDir, unsafeNoFsync: true });
  await withClient(leftover.endpoints[0], async (c) => void (await c.put('k').value('v')));
  expect(alive(leftover.pid)).toBe(true);

  const etcd = await startEmbeddedEtcd({ dataDir, unsafeNoFsync: true });
  try {
    expect(etcd.pid).not.toBe(leftover.pid);
    expect(alive(leftover.pid)).toBe(false);
    expect(await withClient(etcd.endpoints[0], (c) => c.get('k').string())).toBe('v');
    expect((await fs.readFile(path.join(dataDir, 'etcd.pid'), 'utf8')).trim()).toBe(String(etcd.pid));
    // The old handle's stop must not touch the new etcd or its pid file.
    await leftover.stop();
    expect(alive(etcd.pid)).toBe(true);
    expect((await fs.readFile(path.join(dataDir, 'etcd.pid'), 'utf8')).trim()).toBe(String(etcd.pid));
  } finally {
    await etcd.stop();
  }
});

test('a pid file naming some other process leaves that process alone', async () => {
  const dataDir = path.join(tmp, 'foreign-pid');
  await fs.mkdir(dataDir);
  // This very test process: alive, but not an etcd on this data dir.
  await fs.writeFile(path.join(dataDir, 'etcd.pid'), `${process.pid}\n`);
  const etcd = await startEmbeddedEtcd({ dataDir, unsafeNoFsync: true });
  try {
    expect(alive(process.pid)).toBe(true);
    expect((await fs.readFile(path.join(dataDir, 'etcd.pid'), 'utf8')).trim()).toBe(String(etcd.pid));
  } finally {
    await etcd.stop();
  }
});
