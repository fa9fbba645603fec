/**
 * The watch fan-out as clients see it when many watch at once: a client that stops reading is ended once its
 * buffer is full (as kube ends an unresponsive watcher) while the others get every event; watchers with the same
 * selector, another selector or none each see exactly their own view of the same changes.
 */
import { afterEach, describe, expect, test } from '@jest/globals';
import type { IncomingMessage } from 'node:http';
import type { TestServer } from '../support/server.js';
import { GROUP_PATH } from '../support/http.js';
import { parseSamples, total } from '../support/prometheus.js';
import { closeWatches, openWatch, type WatchEvent } from '../support/watch.js';
import {
  GROUP,
  MERGE_PATCH,
  createSecretAs,
  sharedSecretPath,
  sharedSecretsPath,
  uniq,
  useServerWithPeek,
} from '../support/fixtures.js';

let ts: TestServer;
useServerWithPeek((env) => ({ ts } = env));
afterEach(closeWatches);

async function listRv(path: string): Promise<string> {
  const res = await ts.admin.get(path);
  expect(res.status).toBe(200);
  return res.body.metadata.resourceVersion;
}

async function patchSecret(ns: string, name: string, patch: unknown): Promise<any> {
  const res = await ts.admin.patch(sharedSecretPath(ns, name), patch, MERGE_PATCH);
  expect({ status: res.status, body: res.body?.kind === 'Status' ? res.body : undefined }).toEqual({
    status: 200,
    body: undefined,
  });
  return res.body;
}

/** How many SharedSecret watches the server has ended because their client did not keep up (its metric). */
async function terminatedWatchers(): Promise<number> {
  const res = await ts.admin.get('/metrics');
  expect(res.status).toBe(200);
  return total(parseSamples(res.text), 'apiserver_terminated_watchers_total', {
    group: GROUP,
    resource: 'sharedsecrets',
  });
}

/** A watch whose client reads the headers and then nothing, until resume(). */
function openUnreadWatch(path: string): Promise<{ resume(): Promise<{ lines: string[]; endedCleanly: boolean }> }> {
  return new Promise((resolve, reject) => {
    const req = ts.admin.open('GET', `${path}${path.includes('?') ? '&' : '?'}watch=true`);
    req.on('error', reject);
    req.on('response', (res: IncomingMessage) => {
      expect(res.statusCode).toBe(200);
      res.pause();
      resolve({
        resume: () =>
          new Promise((done) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () => done({ lines: text.split('\n'), endedCleanly: true }));
            res.on('aborted', () => done({ lines: text.split('\n'), endedCleanly: false }));
            res.on('error', () => done({ lines: text.split('\n'), endedCleanly: false }));
            res.resume();
          }),
      });
    });
    req.end();
  });
}

describe('slow watchers', () => {
  test('a client that reads nothing is ended once its buffer is full; the other watcher gets every event meanwhile', async () => {
    const ns = uniq('w-slow');
    const name = uniq('big');
    await createSecretAs(ts.admin, ns, name);
    const rv = await listRv(sharedSecretsPath(ns));
    const endedBefore = await terminatedWatchers();
    const stuck = await openUnreadWatch(`${sharedSecretsPath(ns)}?resourceVersion=${rv}`);
    const reader = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?resourceVersion=${rv}`);

    // Changes of about 1.3 MB each, one at a time, until the server says it ended the unread watch: it buffers
    // 16 MiB for a client beyond what the connection holds, so 40 are far more than enough. The client then reads
    // at once: the server cuts the connection of a client that does not take the end of its stream within 30 s,
    // and the time that takes must not depend on how long this machine needs for the changes left.
    const versions: string[] = [];
    while ((await terminatedWatchers()) === endedBefore) {
      expect(versions.length).toBeLessThan(40);
      const value = Buffer.alloc(1000 * 1024, `v${versions.length}-`).toString('base64');
      versions.push((await patchSecret(ns, name, { spec: { data: { k: value } } })).metadata.resourceVersion);
      // The other watcher has this change, so the server has handed it to the unread watch too.
      await reader.count(versions.length, 60_000);
    }
    const [{ lines, endedCleanly }, got] = await Promise.all([stuck.resume(), reader.count(versions.length)]);
    expect(await terminatedWatchers()).toBe(endedBefore + 1);
    expect(got.map((e) => `${e.type}@${e.object.metadata.resourceVersion}`)).toEqual(
      versions.map((v) => `MODIFIED@${v}`),
    );
    expect(reader.ended).toBe(false);

    // The unread watch was ended after whole events: what reached the client is a proper prefix of the changes,
    // in order, and then the stream ends (the client watches again from the last resourceVersion it got).
    expect(endedCleanly).toBe(true);
    expect(lines.pop()).toBe('');
    const seen = lines.map((line) => JSON.parse(line) as WatchEvent);
    expect(seen.length).toBeLessThan(versions.length);
    expect(seen.map((e) => `${e.type}@${e.object.metadata.resourceVersion}`)).toEqual(
      versions.slice(0, seen.length).map((v) => `MODIFIED@${v}`),
    );
  }, 120_000);
});

describe('selectors shared by many watchers', () => {
  test('equal selectors, another selector and none each see their own ADDED/MODIFIED/DELETED for the same changes', async () => {
    const ns = uniq('w-sel');
    const rv = await listRv(sharedSecretsPath(ns));
    const from = `resourceVersion=${rv}`;
    const blue = await Promise.all(
      [0, 1, 2].map(() => openWatch(ts.admin, `${sharedSecretsPath(ns)}?${from}&labelSelector=color%3Dblue`)),
    );
    // The same selector across all namespaces (another prefix) sees the same changes in this namespace.
    const blueEverywhere = await openWatch(ts.admin, `${GROUP_PATH}/sharedsecrets?${from}&labelSelector=color%3Dblue`);
    const green = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?${from}&labelSelector=color%3Dgreen`);
    const all = await openWatch(ts.admin, `${sharedSecretsPath(ns)}?${from}`);

    const name = uniq('s');
    const created = await createSecretAs(ts.admin, ns, name, { color: 'blue' });
    const stillBlue = await patchSecret(ns, name, { spec: { displayName: 'still blue' } });
    const nowGreen = await patchSecret(ns, name, { metadata: { labels: { color: 'green' } } });
    const deleted = await ts.admin.delete(sharedSecretPath(ns, name));
    expect(deleted.status).toBe(200);
    const allEvents = await all.count(4);
    const deletedRv = allEvents[3].object.metadata.resourceVersion;

    const view = (e: WatchEvent) => `${e.type} ${e.object.metadata.labels?.color}@${e.object.metadata.resourceVersion}`;
    const blueView = [
      `ADDED blue@${created.metadata.resourceVersion}`,
      `MODIFIED blue@${stillBlue.metadata.resourceVersion}`,
      // Leaving the selection: DELETED with the last matching state, at the revision of the change.
      `DELETED blue@${nowGreen.metadata.resourceVersion}`,
    ];
    for (const stream of [...blue, blueEverywhere]) expect((await stream.count(3)).map(view)).toEqual(blueView);
    expect((await green.count(2)).map(view)).toEqual([
      `ADDED green@${nowGreen.metadata.resourceVersion}`,
      `DELETED green@${deletedRv}`,
    ]);
    expect(allEvents.map(view)).toEqual([
      `ADDED blue@${created.metadata.resourceVersion}`,
      `MODIFIED blue@${stillBlue.metadata.resourceVersion}`,
      `MODIFIED green@${nowGreen.metadata.resourceVersion}`,
      `DELETED green@${deletedRv}`,
    ]);
    // Every watcher saw the same objects, byte for byte, where their views agree.
    const blueLines = blue.map((s) => s.lines.slice(0, 3));
    expect(blueLines[1]).toEqual(blueLines[0]);
    expect(blueLines[2]).toEqual(blueLines[0]);
    for (const stream of [...blue, blueEverywhere, green]) await stream.quiet(300);
  });
});
