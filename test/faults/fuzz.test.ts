/**
 * Over 10,000 malformed requests (test/faults/fuzz-cases.ts, generated from a fixed seed) against a server
 * process, 16 at a time: broken JSON and YAML, wrongly typed values at every property path of every kind, huge
 * and deeply nested bodies, YAML alias bombs, bad patches of every type, bad selectors, query values, paths,
 * methods, media types and credentials, and malformed HTTP on raw connections.
 *
 * What a client must be able to rely on: every one is answered with the 4xx its case allows, as a JSON
 * metav1.Status whose code is the HTTP status; never a 5xx, a hang or a dropped connection; the server process
 * lives on and stays healthy; and everything it stored in etcd is byte for byte what it was before.
 */
import { afterAll, beforeAll, describe, expect, test } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Etcd3 } from 'etcd3';
import { startTestEtcd, type TestEtcd } from '../support/etcd.js';
import { rawHttp, type HttpResponse } from '../support/http.js';
import { PooledClient, etcdSnapshot, recordFigures, rootTokenFile, runPool, secondsSince } from '../support/load.js';
import { startServerProcess, type ServerProcess } from '../support/serverprocess.js';
import {
  TARGET,
  collectionPath,
  generateCases,
  kinds,
  objectPath,
  type FuzzCase,
  type Fixtures,
} from './fuzz-cases.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_251_122);
const CONCURRENCY = 16;

let etcd: TestEtcd;
let kv: Etcd3;
let tokens: ReturnType<typeof rootTokenFile>;
let server: ServerProcess;
let root: PooledClient;
let anonymous: PooledClient;
const prefix = `/fuzz-${randomUUID()}`;
const fixtures: Fixtures = {};

beforeAll(async () => {
  etcd = await startTestEtcd();
  kv = new Etcd3({ hosts: etcd.endpoint });
  tokens = rootTokenFile();
  server = await startServerProcess({
    etcdEndpoint: etcd.endpoint,
    etcdPrefix: prefix,
    tokenAuthFile: tokens.file,
    // No health checks: their status writes would move the fixtures' resourceVersions under the updates aimed at them.
    args: ['--etcd-compaction-interval=0', '--cluster-health-interval=0'],
  });
  root = new PooledClient(server.url, server.caPem, tokens.token, CONCURRENCY);
  anonymous = new PooledClient(server.url, server.caPem, undefined, CONCURRENCY);
  // One object of each kind for the updates, patches and deletes to aim at.
  for (const k of kinds()) {
    const made = await root.post(collectionPath(k), k.valid(TARGET));
    expect({ kind: k.kind, status: made.status, body: made.body }).toMatchObject({ kind: k.kind, status: 201 });
    fixtures[k.kind] = (await root.get(objectPath(k))).body;
  }
}, 60_000);

afterAll(async () => {
  root?.close();
  anonymous?.close();
  kv?.close();
  await server?.stop();
  await etcd?.stop();
  tokens?.remove();
}, 60_000);

/** What is wrong with an answer to `c` (undefined: nothing). */
function problem(c: FuzzCase, res: HttpResponse): string | undefined {
  const type = String(res.headers['content-type'] ?? '');
  if (res.status >= 500) return `${res.status} (a server error)`;
  if (!c.expect.includes(res.status)) return `${res.status}, expected ${c.expect.join(' or ')}`;
  if (!type.startsWith('application/json')) return `Content-Type ${type}`;
  const b = res.body;
  if (
    b?.kind !== 'Status' ||
    b.apiVersion !== 'v1' ||
    b.status !== 'Failure' ||
    b.code !== res.status ||
    typeof b.message !== 'string'
  )
    return 'not a failure Status with the same code';
  return undefined;
}

async function send(c: FuzzCase): Promise<HttpResponse> {
  const client = c.auth === 'none' || typeof c.auth === 'object' ? anonymous : root;
  const headers: Record<string, string> = { ...c.headers };
  if (typeof c.auth === 'object') headers.Authorization = c.auth.header;
  return client.request(c.method, c.path, { body: c.body, contentType: c.contentType, headers, timeoutMs: 30_000 });
}

/** Writes `raw` on a fresh TLS connection to the server (see support/http.ts). */
function rawRequest(raw: string | Buffer) {
  return rawHttp(server.url, server.caPem, raw);
}

describe('fuzz: malformed requests', () => {
  test('every one gets its 4xx as a Status; the server lives on and etcd is unchanged', async () => {
    // Objects too large for etcd have a test of their own (below), so what they do to the server is seen there.
    const generated = generateCases(SEED, fixtures);
    const cases = generated.filter((c) => c.category !== 'too-large');
    expect(generated.length).toBeGreaterThanOrEqual(10_000);
    const before = await etcdSnapshot(kv, `${prefix}/`);
    expect(before.size).toBeGreaterThanOrEqual(kinds().length);

    const byCategory: Record<string, { cases: number; statuses: Record<number, number> }> = {};
    const problems: string[] = [];
    const start = performance.now();
    await runPool(cases.length, CONCURRENCY, async (i) => {
      const c = cases[i];
      const tally = (byCategory[c.category] ??= { cases: 0, statuses: {} });
      tally.cases += 1;
      let res: HttpResponse;
      try {
        res = await send(c);
      } catch (err) {
        problems.push(`[${c.category}] ${c.what}: no answer (${String(err)})`);
        return;
      }
      tally.statuses[res.status] = (tally.statuses[res.status] ?? 0) + 1;
      const wrong = problem(c, res);
      if (wrong)
        problems.push(
          `[${c.category}] ${c.what} (${c.method} ${c.path.slice(0, 100)}): ${wrong}: ${res.text.slice(0, 200)}`,
        );
    });
    const seconds = secondsSince(start);
    recordFigures('fuzz', {
      seed: SEED,
      cases: cases.length,
      generated: generated.length,
      seconds,
      requestsPerSecond: Math.round(cases.length / seconds),
      byCategory,
      problems: problems.length,
    });

    expect(problems.slice(0, 30)).toEqual([]);
    const after = await etcdSnapshot(kv, `${prefix}/`);
    expect([...after.keys()]).toEqual([...before.keys()]);
    expect(after).toEqual(before);
    // Alive and well.
    expect((await root.get('/readyz')).status).toBe(200);
    for (const k of kinds())
      expect((await root.get(objectPath(k))).body.metadata.resourceVersion).toBe(
        fixtures[k.kind].metadata.resourceVersion,
      );
    expect(server.count('internal error')).toBe(0);
  }, 240_000);

  test('malformed HTTP on raw connections gets a 4xx Status; the server lives on', async () => {
    const target = objectPath(kinds().find((k) => k.kind === 'SharedSecret')!);
    const auth = `Authorization: Bearer ${tokens.token}\r\n`;
    const raws: [string, string | Buffer, number[]][] = [
      ['a header without a colon', `GET /apis HTTP/1.1\r\nHost: x\r\nBad Header Without Colon\r\n\r\n`, [400]],
      ['a space in a header name', `GET /apis HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n`, [400]],
      ['an unknown method', `FROB /apis HTTP/1.1\r\nHost: x\r\n\r\n`, [400, 405]],
      ['an unknown HTTP version', `GET /apis HTTP/9.9\r\nHost: x\r\n\r\n`, [400, 505]],
      ['a space in the path', `GET /a b HTTP/1.1\r\nHost: x\r\n\r\n`, [400]],
      ['a NUL in the path', `GET /ap\u0000is HTTP/1.1\r\nHost: x\r\n\r\n`, [400]],
      [
        'Content-Length abc',
        `POST ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: abc\r\n\r\n{}`,
        [400],
      ],
      [
        'Content-Length -1',
        `POST ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: -1\r\n\r\n{}`,
        [400],
      ],
      [
        'two different Content-Lengths',
        `POST ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
        [400],
      ],
      [
        'Content-Length with chunked',
        `POST ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`,
        [400],
      ],
      [
        'a bad chunk size',
        `PUT ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
        [400],
      ],
      [
        'an unknown transfer encoding',
        `PUT ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n{}`,
        [400, 501],
      ],
      ['headers over 1 MiB', `GET /apis HTTP/1.1\r\nHost: x\r\nX-Big: ${'x'.repeat(1024 * 1024 + 10)}\r\n\r\n`, [431]],
      [
        'a request line over 1 MiB',
        `GET /apis?${'q'.repeat(1024 * 1024 + 10)} HTTP/1.1\r\nHost: x\r\n\r\n`,
        [414, 431, 400],
      ],
      ['binary garbage', Buffer.from(Array.from({ length: 512 }, (_, i) => (i * 97 + 13) % 256)), [400]],
      ['a TLS record inside TLS', Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0x01, 0x00, 0x00, 0x01, 0x00]), [400]],
      // Dot segments, which an HTTP client library would resolve before sending.
      // Dot segments as names (kube: 400, may not be '.' or '..'): never the collection, never a list, never a
      // deletecollection.
      [
        'GET of the name "."',
        `GET ${target.replace(/[^/]+$/, '.')} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`,
        [400, 404],
      ],
      [
        'DELETE of the name "."',
        `DELETE ${target.replace(/[^/]+$/, '.')} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`,
        [400, 404],
      ],
      [
        'DELETE of the name "%2e"',
        `DELETE ${target.replace(/[^/]+$/, '%2e')} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`,
        [400, 404],
      ],
      [
        'GET of the name ".."',
        `GET ${target.replace(/[^/]+$/, '..')} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`,
        [400, 404],
      ],
      [
        'DELETE of the name "%2E%2E"',
        `DELETE ${target.replace(/[^/]+$/, '%2E%2E')} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`,
        [400, 404],
      ],
      [
        'DELETE of ".." after a name',
        `DELETE ${target}/.. HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`,
        [400, 404],
      ],
      [
        'DELETE of the namespace ".."',
        `DELETE ${target.replace(/namespaces\/[^/]+/, 'namespaces/..')} HTTP/1.1\r\nHost: x\r\n${auth}Connection: close\r\n\r\n`,
        [400, 404],
      ],
      [
        'a chunked body that never ends, then garbage',
        `PUT ${target} HTTP/1.1\r\nHost: x\r\n${auth}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\nnot-a-chunk\r\n`,
        [400],
      ],
    ];
    const problems: string[] = [];
    for (const [what, raw, codes] of raws) {
      let answer: Awaited<ReturnType<typeof rawRequest>>;
      try {
        answer = await rawRequest(raw);
      } catch (err) {
        problems.push(`${what}: no answer (${String(err)})`);
        continue;
      }
      if (!codes.includes(answer.status))
        problems.push(`${what}: ${answer.status}, expected ${codes.join(' or ')}: ${answer.text.slice(0, 200)}`);
      else if (answer.body?.kind !== 'Status' || answer.body.code !== answer.status)
        problems.push(`${what}: not a Status with code ${answer.status}: ${answer.text.slice(0, 300)}`);
    }
    expect(problems).toEqual([]);
    expect((await root.get('/readyz')).status).toBe(200);
    // None of it deleted or changed anything.
    for (const k of kinds())
      expect((await root.get(objectPath(k))).body.metadata.resourceVersion).toBe(
        fixtures[k.kind].metadata.resourceVersion,
      );
  }, 120_000);

  // Last: what it finds wrong can upset the server for a while.
  test("objects over etcd's request limit (but under 3 MiB) are 413, and the server goes on serving everyone else", async () => {
    const cases = generateCases(SEED, fixtures).filter((c) => c.category === 'too-large');
    expect(cases.length).toBeGreaterThan(0);
    const problems: string[] = [];
    for (const c of cases) {
      const res = await send(c);
      const wrong = problem(c, res);
      if (wrong) problems.push(`${c.what}: ${wrong}: ${res.text.slice(0, 200)}`);
      // Each time, at once: other requests are served and the server stays ready.
      const other = await root.get(collectionPath(kinds()[0]));
      const ready = await root.get('/readyz');
      if (other.status !== 200 || ready.status !== 200)
        problems.push(`after ${c.what}: a list answers ${other.status}, /readyz ${ready.status}`);
    }
    expect(problems).toEqual([]);
    const after = await etcdSnapshot(kv, `${prefix}/`);
    for (const k of kinds())
      expect((await root.get(objectPath(k))).body.metadata.resourceVersion).toBe(
        fixtures[k.kind].metadata.resourceVersion,
      );
    expect(after.size).toBeGreaterThanOrEqual(kinds().length);
  }, 120_000);
});
