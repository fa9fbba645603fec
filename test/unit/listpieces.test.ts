/**
 * Large list answers in every encoding and shape (src/http/responses.ts writeList): written a slice per bulk turn,
 * so that other requests are served between the slices, and byte for byte the answer written at once. On Node 24
 * with 10,000 small objects, a YAML list held the thread for more than half a second in one piece, a Table for a
 * few hundred milliseconds. Served by express on a real node:http server.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import express from 'express';
import yaml from 'js-yaml';
import { createServer, get, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { EncodedObject, type ObjectList } from '../../src/apimachinery/encoded.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { writeList } from '../../src/http/responses.js';
import { negotiate } from '../../src/http/negotiation.js';
import { shaper } from '../../src/http/shapes.js';
import { partialObjectMetadataList, TableConvertor } from '../../src/http/table.js';
import { loadDefinitions } from '../../src/registry/definitions.js';
import { strategies } from '../../src/kinds/index.js';
import type { BulkJob } from '../../src/storage/bulkturns.js';

const def = loadDefinitions().find((d) => d.kind === 'SharedSecret')!;
const strategy = strategies.SharedSecret;
const ITEMS = 3000;
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';
const YAML_TABLE = 'application/yaml;as=Table;v=v1;g=meta.k8s.io';
const METADATA = 'application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io';
const YAML_METADATA = 'application/yaml;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io';

/** Values YAML must quote, fold, or write as blocks, so that a piece written on its own would show it. */
const AWKWARD = ['', 'null', 'true', '1.5', '- a', 'a: b', "it's", '"q"', 'line\nbreak\n', '#x', 'ünï', ' lead', '*r'];

function secret(i: number): KubeObject {
  const odd = AWKWARD[i % AWKWARD.length];
  return {
    apiVersion: 'management.platform.sh/v1',
    kind: 'SharedSecret',
    metadata: {
      name: `s-${i}`,
      namespace: 'team-a',
      uid: `uid-${i}`,
      resourceVersion: String(100 + i),
      creationTimestamp: '2020-01-01T00:00:00Z',
      labels: { tier: odd.length < 10 ? 'db' : 'web' },
      annotations: { note: odd },
    },
    spec: {
      displayName: odd,
      data: { [`k${i % 7}`]: 'c2VjcmV0' },
      access: i % 3 ? [{ verbs: ['get', 'list'], users: [`u${i}`], teams: [] }] : [],
    },
  };
}

/** What the watch cache serves: items in their JSON form, and some decoded already. */
function list(): ObjectList {
  return {
    apiVersion: 'management.platform.sh/v1',
    kind: 'SharedSecretList',
    metadata: { resourceVersion: '4242', continue: 'eyJ4IjoxfQ', remainingItemCount: 7 },
    items: Array.from({ length: ITEMS }, (_, i) => (i % 2 ? secret(i) : new EncodedObject(JSON.stringify(secret(i))))),
  };
}

/** The answer each Accept has when written at once (as writeObject writes one object). */
function whole(accept: string): string {
  const plain = {
    ...list(),
    items: list().items.map((item) => (item instanceof EncodedObject ? item.decode() : item)),
  };
  const options = { noRefs: true, lineWidth: -1 };
  switch (accept) {
    case 'application/json':
      return `${JSON.stringify(plain)}\n`;
    case 'application/yaml':
      return yaml.dump(plain, options);
    case TABLE:
      return `${JSON.stringify(new TableConvertor(def, strategy).listTable(list()))}\n`;
    case YAML_TABLE:
      return yaml.dump(new TableConvertor(def, strategy).listTable(list()), options);
    case METADATA:
      return `${JSON.stringify(partialObjectMetadataList(list()))}\n`;
    default:
      return yaml.dump(partialObjectMetadataList(list()), options);
  }
}

let server: Server;
let port: number;
/** The bulk turns the answer being written asked for. */
let turns = 0;
const countedJob: BulkJob = {
  turn: () => {
    turns++;
    return new Promise((resolve) => setImmediate(resolve));
  },
};

beforeAll(async () => {
  const app = express();
  app.get('/list', (req, res) => {
    const target = negotiate(req.headers.accept, 'list');
    const shape = shaper(target, def, strategy, new URLSearchParams());
    void writeList(res, 200, shape.list(list()), target.encoding, countedJob);
  });
  server = createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

function fetchList(accept: string): Promise<{ type: string; body: string }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/list', headers: { Accept: accept } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ type: String(res.headers['content-type']), body: Buffer.concat(chunks).toString() }),
      );
    }).on('error', reject);
  });
}

test.each([
  ['application/json', 'application/json'],
  ['application/yaml', 'application/yaml'],
  [TABLE, 'application/json'],
  [YAML_TABLE, 'application/yaml'],
  [METADATA, 'application/json'],
  [YAML_METADATA, 'application/yaml'],
])('a list of %s goes out a slice per bulk turn, and is the answer written at once', async (accept, type) => {
  turns = 0;
  const answer = await fetchList(accept);
  expect(answer.type).toBe(type);
  expect(answer.body).toBe(whole(accept));
  // More than one slice: each piece is at most 256 KiB, and the answer is several times that.
  expect(Buffer.byteLength(answer.body)).toBeGreaterThan(2 * 256 * 1024);
  expect(turns).toBeGreaterThan(1);
});
