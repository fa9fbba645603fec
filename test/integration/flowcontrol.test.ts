/**
 * API Priority and Fairness configured in the host cluster: the server reads the host's FlowSchemas and
 * PriorityLevelConfigurations (kube's built-in ones, plus a level "ci" of one seat, one queue of one request, that
 * lends and borrows nothing, and schemas sending CI callers to it), classifies each kind of request as kube does,
 * says which schema and level in kube's headers, follows changes on the host without a restart, keeps the last
 * configuration while the host is down, and refuses with 429 when the level's queue is full or a request waits too
 * long; system:masters is exempt and never waits. A kube config request held open by a slow virtual cluster signer
 * keeps the ci level's one seat busy. A flow alone uses every seat of its level; while a light flow is at work, one
 * asking for more holds at most --max-seats-per-flow. Without a host cluster, kube's built-in configuration applies; with
 * --enable-priority-and-fairness=false, none.
 */
import { afterAll, beforeAll, expect, test } from '@jest/globals';
import type { IncomingMessage } from 'node:http';
import { SUGGESTED_FLOW_SCHEMAS, MANDATORY_FLOW_SCHEMAS } from '../../src/flowcontrol/bootstrap.js';
import { createLogger } from '../../src/log.js';
import { HEALTH_INTERVAL_MS } from '../support/connectedclusters.js';
import { CLUSTERS_PATH, sharedSecretsPath } from '../support/fixtures.js';
import type { KubeObj } from '../support/hostcluster.js';
import { GROUP_PATH, type HttpClient, type HttpResponse } from '../support/http.js';
import { startTestServerWithUsers, type TestServer } from '../support/server.js';
import { startSlowVirtualCluster, type SlowVirtualCluster } from '../support/slowrequest.js';
import { answerWhen, waitFor } from '../support/wait.js';

const SA_RUNNER = 'system:serviceaccount:ci:runner';
const FS_HEADER = 'x-kubernetes-pf-flowschema-uid';
const PL_HEADER = 'x-kubernetes-pf-prioritylevel-uid';
const DUMP_LEVELS = '/debug/api_priority_and_fairness/dump_priority_levels';

let slow: SlowVirtualCluster;
let ts: TestServer;
let as: Record<'root' | 'alice' | 'bob' | 'carol' | typeof SA_RUNNER, HttpClient>;
const uid: Record<string, string> = {};
const logLines: string[] = [];

const builtInUid = (name: string) =>
  [...MANDATORY_FLOW_SCHEMAS, ...SUGGESTED_FLOW_SCHEMAS].find((fs) => fs.metadata.name === name)!.metadata.uid!;

function flowSchema(name: string, precedence: number, rule: object, distinguisher?: 'ByUser' | 'ByNamespace'): KubeObj {
  return {
    metadata: { name },
    spec: {
      priorityLevelConfiguration: { name: 'ci' },
      matchingPrecedence: precedence,
      ...(distinguisher ? { distinguisherMethod: { type: distinguisher } } : {}),
      rules: [rule],
    },
  };
}

/** A level that neither lends nor borrows, with its own queues. */
function ownLevel(name: string, shares: number, queuing: object): KubeObj {
  return {
    metadata: { name },
    spec: {
      type: 'Limited',
      limited: {
        nominalConcurrencyShares: shares,
        lendablePercent: 0,
        borrowingLimitPercent: 0,
        limitResponse: { type: 'Queue', queuing },
      },
    },
  };
}

const CI_SCHEMAS = [
  flowSchema('ci-user', 100, {
    subjects: [{ kind: 'User', user: { name: 'alice' } }],
    resourceRules: [
      { verbs: ['list'], apiGroups: ['management.platform.sh'], resources: ['clusters'], clusterScope: true },
    ],
  }),
  flowSchema(
    'ci-group',
    200,
    {
      subjects: [{ kind: 'Group', group: { name: 'ci-pipelines' } }],
      resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['sharedsecrets'], namespaces: ['team-a'] }],
    },
    'ByNamespace',
  ),
  flowSchema('ci-serviceaccount', 300, {
    subjects: [{ kind: 'ServiceAccount', serviceAccount: { namespace: 'ci', name: '*' } }],
    nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/apis/*'] }],
  }),
  flowSchema(
    'ci-bob',
    400,
    {
      subjects: [{ kind: 'User', user: { name: 'bob' } }],
      resourceRules: [
        {
          verbs: ['get', 'list'],
          apiGroups: ['management.platform.sh'],
          resources: ['clusters', 'virtualclusterinstances/kubeconfig'],
          clusterScope: true,
          namespaces: ['*'],
        },
      ],
    },
    'ByUser',
  ),
];

/** The schema and level a response names, by what their uids are known as here. */
function classifiedAs(res: HttpResponse): [string, string] {
  const name = (u: unknown) => Object.keys(uid).find((k) => uid[k] === u) ?? `unknown uid ${String(u)}`;
  return [name(res.headers[FS_HEADER]), name(res.headers[PL_HEADER])];
}

beforeAll(async () => {
  // Kube config requests stay in flight until the test lets the virtual cluster sign (slow.release()).
  slow = await startSlowVirtualCluster('held');
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], alice: [], bob: [], carol: ['ci-pipelines'], [SA_RUNNER]: [] },
    {
      kubeconfig: slow.host.kubeconfigPath,
      maxRequestsInflight: 2,
      maxMutatingRequestsInflight: 2,
      clusterHealthIntervalMs: HEALTH_INTERVAL_MS,
    },
    undefined,
    createLogger((line) => void logLines.push(line)),
  );
  ts = server;
  as = server.as;
  const host = slow.host;
  const level = host.putFlowControl(
    'prioritylevelconfigurations',
    ownLevel('ci', 1, { queues: 1, handSize: 1, queueLengthLimit: 1 }),
  );
  uid['pl:ci'] = level.metadata.uid;
  for (const fs of CI_SCHEMAS) uid[fs.metadata.name] = host.putFlowControl('flowschemas', fs).metadata.uid;
  for (const name of ['exempt', 'global-default']) uid[name] = builtInUid(name);
  await slow.createInstance(as.root, 'bob');
  // The host's configuration is in force once alice's list is classified by it.
  await answerWhen(
    "the host's FlowSchemas to reach the server",
    () => as.alice.get(CLUSTERS_PATH),
    (res) => res.headers[FS_HEADER] === uid['ci-user'],
  );
}, 120_000);

afterAll(async () => {
  await ts?.stop();
  await slow?.stop();
}, 60_000);

test('each kind of request is classified by the FlowSchemas of the host, and the answer names them by uid', async () => {
  const levelUid = (res: HttpResponse) => res.headers[PL_HEADER];
  // By user, verb, resource and cluster scope.
  const list = await as.alice.get(CLUSTERS_PATH);
  expect(classifiedAs(list)[0]).toBe('ci-user');
  expect(levelUid(list)).toBe(uid['pl:ci']);
  expect(classifiedAs(await as.alice.get(`${CLUSTERS_PATH}?watch=true&timeoutSeconds=1`))[0]).toBe('global-default');
  // By group and namespace (even a request authorization refuses was classified first).
  expect(classifiedAs(await as.carol.get(sharedSecretsPath('team-a')))[0]).toBe('ci-group');
  expect(classifiedAs(await as.carol.get(sharedSecretsPath('team-b')))[0]).toBe('global-default');
  // By ServiceAccount, on a non-resource path.
  expect(classifiedAs(await as[SA_RUNNER].get(GROUP_PATH))[0]).toBe('ci-serviceaccount');
  expect(classifiedAs(await as[SA_RUNNER].get('/version'))[0]).toBe('global-default');
  expect(classifiedAs(await as.alice.get(GROUP_PATH))[0]).toBe('global-default');
  // system:masters: the exempt schema, whatever it asks.
  expect(classifiedAs(await as.root.get(CLUSTERS_PATH))[0]).toBe('exempt');
});

test('a full queue and a wait past the limit get 429 with Retry-After; system:masters is not queued meanwhile', async () => {
  slow.hold();
  slow.resetCounts();
  const held = as.bob.get(slow.kubeconfigPath);
  await slow.reached();

  // A quarter of a 400 ms deadline: 100 ms in the queue, then refused.
  const timedOut = await as.bob.get(`${CLUSTERS_PATH}?timeout=400ms`);
  expect(timedOut.status).toBe(429);
  expect(timedOut.headers['retry-after']).toBe('1');
  expect(timedOut.body).toMatchObject({
    kind: 'Status',
    reason: 'TooManyRequests',
    message: expect.stringContaining(
      "rejected by API Priority and Fairness: it waited in its priority level's queue for the longest a request may (0.1s)",
    ),
    details: { retryAfterSeconds: 1 },
  });
  expect(classifiedAs(timedOut)).toEqual(['ci-bob', 'pl:ci']);

  const queued = as.bob.get(CLUSTERS_PATH);
  await waitFor('a request waiting in the ci level', async () =>
    /^ci,\s+1,\s+false,\s+false,\s+1,\s+1,/m.test((await as.root.get(DUMP_LEVELS)).text),
  );
  const full = await as.bob.get(CLUSTERS_PATH);
  expect(full.status).toBe(429);
  expect(full.headers['retry-after']).toBe('1');
  expect(full.body.message).toContain("rejected by API Priority and Fairness: its priority level's queue is full");

  // The exempt level has no queue to wait in: masters are served while ci is full.
  expect((await as.root.get(CLUSTERS_PATH)).status).toBe(200);
  const dump = (await as.root.get(DUMP_LEVELS)).text;
  expect(dump).toMatch(/^exempt,\s+0,\s+(true|false),\s+false,\s+0,/m);

  slow.release();
  expect((await held).status).toBe(200);
  expect((await queued).status).toBe(200);

  const metrics = (await as.root.get('/metrics')).text;
  const ci = 'priority_level="ci",flow_schema="ci-bob"';
  expect(metrics).toContain(`apiserver_flowcontrol_rejected_requests_total{${ci},reason="time-out"} 1`);
  expect(metrics).toContain(`apiserver_flowcontrol_rejected_requests_total{${ci},reason="queue-full"} 1`);
  expect(metrics).toMatch(new RegExp(`apiserver_flowcontrol_dispatched_requests_total\\{${ci}\\} [1-9]`));
  expect(metrics).toContain(`apiserver_flowcontrol_current_inqueue_requests{${ci}} 0`);
  expect(metrics).toContain('apiserver_flowcontrol_nominal_limit_seats{priority_level="ci"} 1');
  expect(metrics).toContain('apiserver_flowcontrol_current_limit_seats{priority_level="ci"} 1');
  expect(metrics).toMatch(/apiserver_flowcontrol_request_wait_duration_seconds_count\{[^}]*priority_level="ci"/);
  expect(metrics).toMatch(/apiserver_flowcontrol_current_executing_seats\{[^}]*priority_level="ci"/);
  expect(metrics).toMatch(/apiserver_flowcontrol_work_estimated_seats_bucket\{[^}]*priority_level="ci"/);
  expect(metrics).not.toMatch(/apiserver_flowcontrol_rejected_requests_total\{[^}]*priority_level="exempt"/);
}, 30_000);

test('the debug dumps are for those allowed the path (system:masters), not for other callers', async () => {
  const levels = await as.root.get(DUMP_LEVELS);
  expect(levels.status).toBe(200);
  expect(levels.text.split('\n')[0]).toMatch(/^PriorityLevelName, +ActiveQueues, +IsIdle,/);
  expect(levels.text).toMatch(/^global-default,/m);
  const queues = await as.root.get('/debug/api_priority_and_fairness/dump_queues');
  expect(queues.text).toMatch(/^ci, +0, +0, +0, +0,/m);
  expect((await as.alice.get(DUMP_LEVELS)).status).toBe(403);
});

test('a change on the host takes effect without a restart; a schema naming a missing level is ignored', async () => {
  const host = slow.host;
  // A schema before ci-user naming a level that does not exist: kube leaves it out, ci-user still matches.
  const dangling = flowSchema('dangling', 50, CI_SCHEMAS[0].spec.rules[0]);
  dangling.spec.priorityLevelConfiguration.name = 'missing';
  host.putFlowControl('flowschemas', dangling);
  // ci-user after global-default (9900).
  host.putFlowControl('flowschemas', { ...CI_SCHEMAS[0], spec: { ...CI_SCHEMAS[0].spec, matchingPrecedence: 9999 } });
  await answerWhen(
    'the changed precedence to reach the server',
    () => as.alice.get(CLUSTERS_PATH),
    (res) => res.headers[FS_HEADER] === uid['global-default'],
  );
  expect(
    logLines.some((l) => l.includes('PriorityLevelConfiguration does not exist') && l.includes('"name":"dangling"')),
  ).toBe(true);
  host.putFlowControl('flowschemas', CI_SCHEMAS[0]);
  await answerWhen(
    'ci-user back in front',
    () => as.alice.get(CLUSTERS_PATH),
    (res) => res.headers[FS_HEADER] === uid['ci-user'],
  );
  host.removeFlowControl('flowschemas', 'dangling');
});

test('while the host cannot be reached, the last configuration stays', async () => {
  const host = slow.host;
  await host.setDown(true);
  try {
    await waitFor('the informers to find the host gone', () =>
      logLines.some((l) => l.includes('host watch failed') && l.includes('flowschemas')),
    );
    expect(classifiedAs(await as.alice.get(CLUSTERS_PATH))[0]).toBe('ci-user');
  } finally {
    await host.setDown(false);
  }
});

test("requests waiting on a slow cluster keep their level's seats, not their flow's: the tenant's other requests run", async () => {
  // A level of all 4 of the server's seats, for bob's kube config requests and lists of Clusters.
  const host = slow.host;
  const level = host.putFlowControl(
    'prioritylevelconfigurations',
    ownLevel('wide', 1000, { queues: 16, handSize: 4, queueLengthLimit: 10 }),
  );
  const schema = flowSchema('wide-bob', 10, CI_SCHEMAS[3].spec.rules[0], 'ByUser');
  schema.spec.priorityLevelConfiguration.name = 'wide';
  const schemaUid = host.putFlowControl('flowschemas', schema).metadata.uid;
  try {
    await answerWhen(
      'bob in the wide level',
      () => as.bob.get(CLUSTERS_PATH),
      (res) => res.headers[FS_HEADER] === schemaUid && res.headers[PL_HEADER] === level.metadata.uid,
    );
    // Two kube config requests held at the virtual cluster's signer: as many seats as bob's flow may hold.
    slow.hold();
    const held = [0, 1].map(() => {
      const h = { done: false, res: as.bob.get(slow.kubeconfigPath) };
      void h.res.then(() => (h.done = true));
      return h;
    });
    await waitFor('both kube config requests to execute', async () =>
      /^apiserver_flowcontrol_current_executing_requests\{[^}]*flow_schema="wide-bob"[^}]*\} 2$/m.test(
        (await as.root.get('/metrics')).text,
      ),
    );
    // His list runs now, in the level's two free seats, not after a kube config request ends.
    expect((await as.bob.get(CLUSTERS_PATH)).status).toBe(200);
    expect(held.map((h) => h.done)).toEqual([false, false]);
    slow.release();
    for (const h of held) expect((await h.res).status).toBe(200);
  } finally {
    host.removeFlowControl('flowschemas', 'wide-bob');
    host.removeFlowControl('prioritylevelconfigurations', 'wide');
  }
  await answerWhen(
    'bob back in the ci level',
    () => as.bob.get(CLUSTERS_PATH),
    (res) => res.headers[FS_HEADER] === uid['ci-bob'],
  );
}, 60_000);

/** Helpers for a server of kube's built-in configuration where dave and erin are each a flow of global-default. */
function globalDefault(server: { as: { root: HttpClient } }) {
  const metrics = async () => (await server.as.root.get('/metrics')).text;
  const gauge = (name: string, n: number) => async () =>
    new RegExp(`^${name}\\{[^}]*priority_level="global-default"[^}]*\\} ${n}$`, 'm').test(await metrics());
  // A create whose body is held back by the test: it holds its seat until its body has come.
  const body = JSON.stringify({
    apiVersion: 'management.platform.sh/v1',
    kind: 'OwnedAccessKey',
    metadata: { generateName: 'held-' },
    spec: {},
  });
  const hold = (client: HttpClient, query = '') => {
    const req = client.open('POST', `${KEYS_PATH}${query}`, {
      'Content-Type': 'application/json',
      'Content-Length': String(Buffer.byteLength(body)),
    });
    req.flushHeaders();
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode!, text }));
      });
      req.on('error', reject);
    });
    // A test that ends early destroys what it holds: not an unhandled failure.
    answer.catch(() => undefined);
    return { req, answer, send: () => req.end(body) };
  };
  return {
    hold,
    inQueue: (n: number) => gauge('apiserver_flowcontrol_current_inqueue_requests', n),
    executingSeats: (n: number) => gauge('apiserver_flowcontrol_current_executing_seats', n),
    waitingForBodyTurn: (n: number) => gauge('apiserver_flowcontrol_current_body_turn_waiting_requests', n),
  };
}

const KEYS_PATH = `${GROUP_PATH}/ownedaccesskeys`;

test('a flow alone uses every seat its level has; while a light flow is at work it holds at most --max-seats-per-flow', async () => {
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], dave: [], erin: [] },
    { maxSeatsPerFlow: 2 },
    ts.etcd,
  );
  const { hold, inQueue, executingSeats } = globalDefault(server);
  const holding = [hold(server.as.dave), hold(server.as.dave)];
  const erins: ReturnType<typeof hold>[] = [];
  try {
    await waitFor("dave's two creates to hold their seats", executingSeats(2));
    // Alone, dave holding as many seats as the bound runs more at once: nobody else is at work. (The metrics GETs
    // are system:masters', a light flow too, but they come only between his requests.)
    expect((await server.as.dave.get(KEYS_PATH)).status).toBe(200);
    // erin comes, asking for one seat (a light flow): now dave's next request waits in his queue, though the level
    // has seats free.
    erins.push(hold(server.as.erin));
    await waitFor("erin's create to hold its seat", executingSeats(3));
    const next = server.as.dave.get(KEYS_PATH);
    await waitFor("dave's list to wait in global-default's queue", inQueue(1));
    // erin is served at once meanwhile.
    expect((await server.as.erin.get(KEYS_PATH)).status).toBe(200);
    expect(await inQueue(1)()).toBe(true);
    // dave's own create ending, so that he holds fewer than the bound, lets his list in.
    holding[0].send();
    expect((await holding[0].answer).status).toBe(201);
    expect((await next).status).toBe(200);
    holding[1].send();
    erins[0].send();
    expect((await holding[1].answer).status).toBe(201);
    expect((await erins[0].answer).status).toBe(201);
  } finally {
    for (const h of [...holding, ...erins]) h.req.destroy();
    await server.stop();
  }
}, 60_000);

test("an anonymous client's cheap requests, however often, do not hold a client alone to --max-seats-per-flow", async () => {
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], dave: [] },
    { maxSeatsPerFlow: 2 },
    ts.etcd,
  );
  const { hold, executingSeats } = globalDefault(server);
  const holding = [hold(server.as.dave), hold(server.as.dave)];
  let probing = true;
  const prober = (async () => {
    while (probing) expect((await server.anonymous.get('/version')).status).toBe(200);
  })();
  try {
    await waitFor("dave's two creates to hold their seats", executingSeats(2));
    // dave holds as many seats as the bound; his next request runs once system:masters' scrapes (a light flow) are
    // a second behind, well within its wait limit (5 s of this deadline), though /version keeps being asked.
    expect((await server.as.dave.get(`${KEYS_PATH}?timeout=20s`)).status).toBe(200);
  } finally {
    probing = false;
    await prober;
    for (const h of holding) h.req.destroy();
    await server.stop();
  }
}, 60_000);

test('a client alone whose bodies do not come holds seats for no more of them than --max-seats-per-flow; the next client is served', async () => {
  // 60 seats in all: global-default has 5 of its own and may borrow from the other levels.
  const server = await startTestServerWithUsers(
    { root: ['system:masters'], dave: [], erin: [] },
    { maxSeatsPerFlow: 1, maxRequestsInflight: 40, maxMutatingRequestsInflight: 20 },
    ts.etcd,
  );
  const { hold, executingSeats, waitingForBodyTurn } = globalDefault(server);
  // As many as the server has seats: without the turns they would hold every seat global-default may have.
  const holding = Array.from({ length: 60 }, () => hold(server.as.dave));
  let late: ReturnType<typeof hold> | undefined;
  try {
    // One holds a seat; the others wait for its turn, holding none.
    await waitFor("dave's creates to wait for their body turns", waitingForBodyTurn(59));
    expect(await executingSeats(1)()).toBe(true);
    // erin is served (with every seat taken she would wait her wait limit, 2 s for this deadline, and get 429).
    expect((await server.as.erin.get(`${KEYS_PATH}?timeout=8s`)).status).toBe(200);
    // A create of dave's that waits for a turn longer than its wait limit (1 s of a 4 s deadline) gets 429.
    late = hold(server.as.dave, '?timeout=4s');
    const refused = await late.answer;
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text)).toMatchObject({
      kind: 'Status',
      reason: 'TooManyRequests',
      code: 429,
      message: expect.stringContaining('its body had not come, and its flow already had 1 such request'),
    });
    // Each body sent passes the turn on: all are created, one after another.
    for (const h of holding) h.send();
    for (const h of holding) expect((await h.answer).status).toBe(201);
    await waitFor('no request left waiting for a turn or holding a seat', async () => {
      return (await waitingForBodyTurn(0)()) && (await executingSeats(0)());
    });
  } finally {
    for (const h of [...holding, ...(late ? [late] : [])]) h.req.destroy();
    await server.stop();
  }
}, 60_000);

/**
 * A server of 60 seats in all (global-default has 5 of its own and may borrow from the other levels) and 300
 * SharedSecrets of 40 KiB that dave may list, 16 MiB as JSON: more than a list answers in one piece (256 items) and far
 * more than a connection's buffers hold. Started by the first test that needs it, for the tests of unread answers.
 */
type UnreadAnswersServer = TestServer & { as: Record<'root' | 'dave' | 'erin', HttpClient> };
let unread: Promise<{ server: UnreadAnswersServer; ns: string }> | undefined;
function unreadAnswersServer(): Promise<{ server: UnreadAnswersServer; ns: string }> {
  unread ??= (async () => {
    const server = await startTestServerWithUsers(
      { root: ['system:masters'], dave: [], erin: [] },
      { maxSeatsPerFlow: 1, maxRequestsInflight: 40, maxMutatingRequestsInflight: 20 },
      ts.etcd,
    );
    const ns = 'unread-answers';
    for (let batch = 0; batch < 300; batch += 30) {
      const created = await Promise.all(
        Array.from({ length: 30 }, (_, j) =>
          server.as.root.post(sharedSecretsPath(ns), {
            apiVersion: 'management.platform.sh/v1',
            kind: 'SharedSecret',
            // The first 256: as many as a list answers in one piece.
            metadata: { name: `big-${batch + j}`, labels: { part: batch + j < 256 ? 'first' : 'rest' } },
            spec: {
              data: { k: Buffer.alloc(40 * 1024, `big-${batch + j}`).toString('base64') },
              access: [{ verbs: ['get', 'list'], users: ['dave'] }],
            },
          }),
        ),
      );
      expect(created.map((r) => r.status)).toEqual(Array(30).fill(201));
    }
    // Lists of the watch cache, once it has them all (asked for as metadata: 16 MiB at each look took seconds).
    const metadataOnly = { Accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' };
    await answerWhen(
      'the watch cache to hold the 300',
      () => server.as.dave.get(`${sharedSecretsPath(ns)}?resourceVersion=0`, { headers: metadataOnly }),
      (res) => res.body.items?.length === 300,
      60_000,
    );
    return { server, ns };
  })();
  return unread;
}

afterAll(async () => {
  await (await unread?.catch(() => undefined))?.server.stop();
}, 60_000);

/** Lists dave asks for and does not read: their answers, once their headers have come. */
function unreadLists(server: UnreadAnswersServer, asks: Array<{ path: string; headers?: Record<string, string> }>) {
  const lists = asks.map(({ path, headers }) => {
    const req = server.as.dave.open('GET', path, headers);
    const answer = new Promise<IncomingMessage>((resolve, reject) => {
      req.on('response', (res) => {
        res.pause();
        resolve(res);
      });
      req.on('error', reject);
    });
    answer.catch(() => undefined);
    req.end();
    return { req, answer };
  });
  return {
    answers: () => Promise.all(lists.map((l) => l.answer)),
    destroy: () => lists.forEach((l) => l.req.destroy()),
  };
}

/** The items of an answer, read to its end. */
async function itemsOf(answer: IncomingMessage): Promise<unknown[]> {
  const chunks: Buffer[] = [];
  answer.on('data', (c: Buffer) => chunks.push(c)).resume();
  await new Promise((resolve) => answer.on('end', resolve));
  return JSON.parse(Buffer.concat(chunks).toString()).items;
}

test('a client alone whose list answers it does not take holds no seats meanwhile; the next client is served, and the lists go on when taken', async () => {
  const { server, ns } = await unreadAnswersServer();
  const { executingSeats } = globalDefault(server);
  // As many lists as the server has seats and more, none read: without giving their seats back they would hold
  // every seat global-default may have until their deadline.
  const lists = unreadLists(server, Array(64).fill({ path: `${sharedSecretsPath(ns)}?resourceVersion=0` }));
  try {
    const answers = await lists.answers();
    expect(answers.map((a) => a.statusCode)).toEqual(Array(64).fill(200));
    await waitFor('the lists to wait for dave to take them, holding no seats', executingSeats(0));
    // erin is served (with every seat held she would wait her wait limit, 2 s of this deadline, and get 429).
    expect((await server.as.erin.get(`${KEYS_PATH}?timeout=8s`)).status).toBe(200);
    // Taken, a list goes on to its end, whole.
    expect(await itemsOf(answers[0])).toHaveLength(300);
  } finally {
    lists.destroy();
    await waitFor('every seat back', executingSeats(0));
  }
}, 120_000);

test('an answer written whole that its client does not take holds no seats either: a list of up to 256 items, or one asked for with If-None-Match', async () => {
  const { server, ns } = await unreadAnswersServer();
  const { executingSeats } = globalDefault(server);
  // 14 MiB each, written at once (one piece of 256 items; express's send, for a conditional request), which Node then
  // holds for a client that does not read it.
  const lists = unreadLists(server, [
    ...Array(32).fill({ path: `${sharedSecretsPath(ns)}?resourceVersion=0&labelSelector=part%3Dfirst` }),
    ...Array(32).fill({ path: `${sharedSecretsPath(ns)}?resourceVersion=0`, headers: { 'If-None-Match': '"x"' } }),
  ]);
  try {
    const answers = await lists.answers();
    expect(answers.map((a) => a.statusCode)).toEqual(Array(64).fill(200));
    await waitFor('the answers to wait for dave to take them, holding no seats', executingSeats(0));
    expect((await server.as.erin.get(`${KEYS_PATH}?timeout=8s`)).status).toBe(200);
    // Taken, each answer is whole.
    expect(await itemsOf(answers[0])).toHaveLength(256);
    expect(await itemsOf(answers[63])).toHaveLength(300);
  } finally {
    lists.destroy();
    await waitFor('every seat back', executingSeats(0));
  }
}, 120_000);

test("without a host cluster kube's built-in configuration applies; with APF off there is none", async () => {
  const builtIn = await startTestServerWithUsers({ root: ['system:masters'], dave: [] }, {}, ts.etcd);
  const off = await startTestServerWithUsers(
    { dave: [] },
    { enablePriorityAndFairness: false, maxRequestsInflight: 0, maxMutatingRequestsInflight: 0 },
    ts.etcd,
  );
  try {
    const tenant = await builtIn.as.dave.get(CLUSTERS_PATH);
    expect(tenant.headers[FS_HEADER]).toBe(builtInUid('global-default'));
    expect((await builtIn.as.root.get(CLUSTERS_PATH)).headers[FS_HEADER]).toBe(builtInUid('exempt'));
    expect((await builtIn.anonymous.get('/readyz')).headers[FS_HEADER]).toBe(builtInUid('probes'));
    // 600 seats (400 + 200) over kube's 245 shares.
    const metrics = (await builtIn.as.root.get('/metrics')).text;
    expect(metrics).toContain('apiserver_flowcontrol_nominal_limit_seats{priority_level="global-default"} 49');
    expect(metrics).toContain('apiserver_flowcontrol_nominal_limit_seats{priority_level="workload-low"} 245');

    const plain = await off.as.dave.get(CLUSTERS_PATH);
    expect(plain.headers[FS_HEADER]).toBeUndefined();
    expect((await off.admin.get('/metrics')).text).not.toContain('apiserver_flowcontrol_');
  } finally {
    await builtIn.stop();
    await off.stop();
  }
}, 60_000);
