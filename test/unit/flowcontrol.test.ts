/**
 * API Priority and Fairness, piece by piece (src/flowcontrol): matching and classification against kube's built-in
 * configuration, shuffle sharding, fair queuing in a queue set (on a clock the test moves), the division of the
 * server's seats with lending and borrowing, the estimate of a list's seats, and how a bad configuration is digested.
 */
import { describe, expect, jest, test } from '@jest/globals';
import { parseFlags } from '../../src/config.js';
import { FlowActivity } from '../../src/flowcontrol/activity.js';
import { allocate, fairAllocation, levelBounds } from '../../src/flowcontrol/concurrency.js';
import { FlowControl } from '../../src/flowcontrol/controller.js';
import type { RequestDigest } from '../../src/flowcontrol/match.js';
import { QueueSet, dealHand, flowHash, type SeatRequest, type Ticket } from '../../src/flowcontrol/queueset.js';
import { estimateWork, levelMaxSeats } from '../../src/flowcontrol/seats.js';
import { WatchTracker } from '../../src/flowcontrol/watches.js';
import { builtInConfiguration } from '../../src/flowcontrol/source.js';
import type { FlowSchema, PriorityLevelConfiguration } from '../../src/flowcontrol/types.js';
import { waitLimit } from '../../src/http/priorityandfairness.js';

const silent = { warn() {} };

function digest(
  user: { name: string; groups?: string[] },
  info: Partial<RequestDigest['info']> & { path?: string },
): RequestDigest {
  return {
    user: { name: user.name, groups: user.groups ?? ['system:authenticated'] },
    info: {
      isResourceRequest: info.resource !== undefined,
      verb: 'get',
      apiGroup: '',
      resource: '',
      subresource: '',
      namespace: '',
      path: '/',
      ...info,
    },
  };
}

function builtIn(serverSeats = 600): FlowControl {
  const fc = new FlowControl(serverSeats, silent);
  builtInConfiguration(fc);
  return fc;
}

describe('classification with the built-in configuration', () => {
  const fc = builtIn();
  const classify = (d: RequestDigest) => {
    const c = fc.classify(d);
    return [c.flowSchema.metadata.name, c.level.name, c.distinguisher];
  };

  test('system:masters is exempt, whatever it asks', () => {
    expect(
      classify(digest({ name: 'root', groups: ['system:masters'] }, { resource: 'clusters', verb: 'list' })),
    ).toEqual(['exempt', 'exempt', '']);
  });

  test('health probes are exempt for everyone; other paths of an anonymous caller are global-default', () => {
    const anonymous = { name: 'system:anonymous', groups: ['system:unauthenticated'] };
    expect(classify(digest(anonymous, { path: '/readyz' }))).toEqual(['probes', 'exempt', '']);
    expect(classify(digest(anonymous, { path: '/version' }))).toEqual([
      'global-default',
      'global-default',
      'system:anonymous',
    ]);
  });

  test('ServiceAccounts: kube-system ones by namespace at workload-high, their leases at leader-election, others at workload-low', () => {
    const sa = (ns: string, name: string) => ({
      name: `system:serviceaccount:${ns}:${name}`,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
    });
    expect(classify(digest(sa('kube-system', 'ctl'), { resource: 'pods', namespace: 'a', verb: 'list' }))).toEqual([
      'kube-system-service-accounts',
      'workload-high',
      'a',
    ]);
    expect(
      classify(
        digest(sa('kube-system', 'ctl'), {
          resource: 'leases',
          apiGroup: 'coordination.k8s.io',
          namespace: 'a',
          verb: 'update',
        }),
      ),
    ).toEqual(['system-leader-election', 'leader-election', 'system:serviceaccount:kube-system:ctl']);
    expect(classify(digest(sa('ci', 'runner'), { resource: 'clusters', verb: 'list' }))).toEqual([
      'service-accounts',
      'workload-low',
      'system:serviceaccount:ci:runner',
    ]);
  });

  test('nodes: their own objects at node-high, the rest at system', () => {
    const node = { name: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'] };
    expect(classify(digest(node, { resource: 'nodes', subresource: 'status', verb: 'patch' }))).toEqual([
      'system-node-high',
      'node-high',
      'system:node:n1',
    ]);
    expect(classify(digest(node, { resource: 'pods', namespace: 'a', verb: 'list' }))).toEqual([
      'system-nodes',
      'system',
      'system:node:n1',
    ]);
  });
});

describe('matching a FlowSchema of the host', () => {
  const level: PriorityLevelConfiguration = {
    metadata: { name: 'ci', uid: 'pl-ci' },
    spec: {
      type: 'Limited',
      limited: {
        nominalConcurrencyShares: 10,
        limitResponse: { type: 'Queue', queuing: { queues: 4, handSize: 2, queueLengthLimit: 5 } },
      },
    },
  };
  const schema = (name: string, spec: Partial<FlowSchema['spec']>): FlowSchema => ({
    metadata: { name, uid: `fs-${name}` },
    spec: { priorityLevelConfiguration: { name: 'ci' }, matchingPrecedence: 500, ...spec },
  });
  const fc = new FlowControl(100, silent);
  fc.configure(
    [
      schema('by-user', {
        matchingPrecedence: 100,
        rules: [
          {
            subjects: [{ kind: 'User', user: { name: 'alice' } }],
            resourceRules: [
              { verbs: ['list'], apiGroups: ['management.platform.sh'], resources: ['clusters'], clusterScope: true },
            ],
          },
        ],
      }),
      schema('by-group-in-namespace', {
        matchingPrecedence: 200,
        distinguisherMethod: { type: 'ByNamespace' },
        rules: [
          {
            subjects: [{ kind: 'Group', group: { name: 'ci' } }],
            resourceRules: [
              { verbs: ['*'], apiGroups: ['*'], resources: ['sharedsecrets/status'], namespaces: ['p-*', 'team-a'] },
            ],
          },
        ],
      }),
      schema('by-serviceaccount', {
        matchingPrecedence: 300,
        rules: [
          {
            subjects: [{ kind: 'ServiceAccount', serviceAccount: { namespace: 'ci', name: '*' } }],
            nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/apis/*'] }],
          },
        ],
      }),
    ],
    [level],
  );
  const schemaOf = (d: RequestDigest) => fc.classify(d).flowSchema.metadata.name;

  test('by user, verb, group, resource and cluster scope', () => {
    const list = { resource: 'clusters', apiGroup: 'management.platform.sh', verb: 'list' };
    expect(schemaOf(digest({ name: 'alice' }, list))).toBe('by-user');
    expect(schemaOf(digest({ name: 'bob' }, list))).toBe('catch-all');
    expect(schemaOf(digest({ name: 'alice' }, { ...list, verb: 'watch' }))).toBe('catch-all');
    expect(schemaOf(digest({ name: 'alice' }, { ...list, namespace: 'x' }))).toBe('catch-all');
  });

  test('by group, subresource and namespace (no wildcard prefixes: "p-*" is a name), distinguished by namespace', () => {
    const ci = { name: 'runner', groups: ['ci', 'system:authenticated'] };
    const status = { resource: 'sharedsecrets', subresource: 'status', verb: 'update' };
    const c = fc.classify(digest(ci, { ...status, namespace: 'team-a' }));
    expect([c.flowSchema.metadata.name, c.distinguisher]).toEqual(['by-group-in-namespace', 'team-a']);
    expect(schemaOf(digest(ci, { ...status, namespace: 'p-web' }))).toBe('catch-all');
    expect(schemaOf(digest(ci, { ...status, subresource: '', namespace: 'team-a' }))).toBe('catch-all');
  });

  test('by ServiceAccount of a namespace, and a non-resource path prefix', () => {
    const runner = { name: 'system:serviceaccount:ci:runner' };
    expect(schemaOf(digest(runner, { path: '/apis/management.platform.sh' }))).toBe('by-serviceaccount');
    expect(schemaOf(digest(runner, { path: '/api' }))).toBe('catch-all');
    expect(schemaOf(digest({ name: 'system:serviceaccount:other:runner' }, { path: '/apis/x' }))).toBe('catch-all');
  });
});

describe('digesting a configuration', () => {
  test('a schema naming a missing level, and invalid objects, are left out with a warning; the mandatory ones are supplied', () => {
    const warnings: [string, unknown][] = [];
    const fc = new FlowControl(100, { warn: (msg, fields) => warnings.push([msg, fields]) });
    const everyone = [
      {
        subjects: [{ kind: 'Group' as const, group: { name: 'system:authenticated' } }],
        nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
      },
    ];
    fc.configure(
      [
        {
          metadata: { name: 'dangling' },
          spec: { priorityLevelConfiguration: { name: 'missing' }, matchingPrecedence: 10, rules: everyone },
        },
        {
          metadata: { name: 'bad-precedence' },
          spec: { priorityLevelConfiguration: { name: 'odd' }, matchingPrecedence: 0, rules: everyone },
        },
      ],
      [
        {
          metadata: { name: 'odd' },
          spec: {
            type: 'Limited',
            limited: { limitResponse: { type: 'Queue', queuing: { queues: 2, handSize: 3, queueLengthLimit: 1 } } },
          },
        },
      ],
    );
    expect(fc.flowSchemas().map((s) => s.metadata.name)).toEqual(['exempt', 'catch-all']);
    expect(
      fc
        .levels()
        .map((l) => l.name)
        .sort(),
    ).toEqual(['catch-all', 'exempt']);
    expect(warnings.map(([msg]) => msg)).toEqual([
      'ignoring an invalid PriorityLevelConfiguration',
      'ignoring a FlowSchema whose PriorityLevelConfiguration does not exist (dangling)',
      'ignoring an invalid FlowSchema',
    ]);
    expect(JSON.stringify(warnings[0][1])).toContain('handSize: Invalid value: 3: must be at most queues (2)');
    const c = fc.classify(digest({ name: 'bob' }, { path: '/version' }));
    expect([c.flowSchema.metadata.name, c.level.name]).toEqual(['catch-all', 'catch-all']);
  });

  test('objects of any shape are ignored with a warning, never a crash', () => {
    const warnings: string[] = [];
    const fc = new FlowControl(100, { warn: (msg) => warnings.push(msg) });
    const garbage = [
      {},
      { metadata: { name: 'x' } },
      { metadata: { name: 'y' }, spec: { rules: [null, { subjects: 'all' }] } },
    ];
    fc.configure(garbage as unknown as FlowSchema[], garbage as unknown as PriorityLevelConfiguration[]);
    expect(warnings).toHaveLength(6);
    expect(fc.flowSchemas().map((s) => s.metadata.name)).toEqual(['exempt', 'catch-all']);
  });

  test('the mandatory objects keep their built-in spec: system:masters stays exempt whatever the host says', () => {
    const fc = new FlowControl(100, silent);
    fc.configure(
      [
        {
          metadata: { name: 'exempt', uid: 'host-exempt' },
          spec: {
            priorityLevelConfiguration: { name: 'exempt' },
            matchingPrecedence: 1,
            rules: [
              {
                subjects: [{ kind: 'User', user: { name: 'nobody' } }],
                nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }],
              },
            ],
          },
        },
      ],
      [
        {
          metadata: { name: 'exempt', uid: 'host-pl' },
          spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1 } },
        },
        { metadata: { name: 'catch-all' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 1000 } } },
      ],
    );
    const c = fc.classify(digest({ name: 'root', groups: ['system:masters'] }, { path: '/metrics' }));
    expect([c.flowSchema.metadata.uid, c.level.uid, c.level.exempt]).toEqual(['host-exempt', 'host-pl', true]);
    expect(fc.levels().find((l) => l.name === 'catch-all')!.config.spec.limited?.nominalConcurrencyShares).toBe(5);
  });
});

describe('shuffle sharding', () => {
  test('deals handSize distinct queues, the same for the same flow', () => {
    for (const flow of ['alice', 'bob', 'carol', 'dave']) {
      const hand = dealHand(flowHash('global-default', flow), 128, 6);
      expect(new Set(hand).size).toBe(6);
      expect(hand.every((q) => q >= 0 && q < 128)).toBe(true);
      expect(dealHand(flowHash('global-default', flow), 128, 6)).toEqual(hand);
    }
    expect(dealHand(flowHash('a', 'x'), 4, 4).sort()).toEqual([0, 1, 2, 3]);
  });
});

describe('a queue set', () => {
  function clock() {
    let now = 1000;
    return { now: () => now, advance: (ms: number) => (now += ms) };
  }
  function request(flow: string, seats = 1, log?: string[]): SeatRequest {
    return { flowSchema: 'fs', distinguisher: flow, seats, onDispatch: () => log?.push(flow) };
  }
  const ticketOf = (r: ReturnType<QueueSet['enqueue']>): Ticket => {
    if ('rejected' in r) throw new Error(`rejected: ${r.rejected}`);
    return r.ticket;
  };

  test('a flow that floods its queues does not delay another flow behind all its requests', () => {
    const c = clock();
    const qs = new QueueSet({ queuing: { queues: 8, handSize: 1, queueLengthLimit: 50 }, concurrencyLimit: 1 }, c.now);
    const order: string[] = [];
    const tickets: Ticket[] = [];
    for (let i = 0; i < 5; i++) tickets.push(ticketOf(qs.enqueue(request('flood', 1, order))));
    const quiet = ticketOf(qs.enqueue(request('quiet', 1, order)));
    expect(order).toEqual(['flood']);
    expect(qs.waiting).toBe(5);
    // Each request runs 100 ms; the quiet flow goes second, not sixth.
    const running = [tickets[0]];
    while (running.length) {
      c.advance(100);
      qs.finish(running.shift()!);
      const next = [...tickets, quiet].find((t) => t.state === 'executing');
      if (next) running.push(next);
    }
    expect(order).toEqual(['flood', 'quiet', 'flood', 'flood', 'flood', 'flood']);
  });

  test('a flow leaves the headroom to others: a flow arriving at a level another one fills starts at once', () => {
    const c = clock();
    const config = {
      queuing: { queues: 16, handSize: 4, queueLengthLimit: 50 },
      concurrencyLimit: 10,
      flowHeadroom: 3,
    };
    const qs = new QueueSet(config, c.now);
    const flood = Array.from({ length: 5 }, () => ticketOf(qs.enqueue(request('flood', 3))));
    // 3 + 3 = 6 seats; a third would leave 1 < 3 to the others.
    expect(flood.map((t) => t.state)).toEqual(['executing', 'executing', 'waiting', 'waiting', 'waiting']);
    expect(qs.seatsInUse).toBe(6);
    const quiet = ticketOf(qs.enqueue(request('quiet', 1)));
    expect(quiet.state).toBe('executing');
    // The flood's own requests ending let its next one in (from whichever of its queues is furthest behind).
    qs.finish(flood[0]);
    expect(flood.filter((t) => t.state === 'executing')).toHaveLength(2);
    expect(qs.seatsInUse).toBe(7);

    // A flow holding nothing may start one request wider than the limit less the headroom.
    const narrow = new QueueSet({ ...config, concurrencyLimit: 4 }, c.now);
    const wide = ticketOf(narrow.enqueue(request('a', 3)));
    const second = ticketOf(narrow.enqueue(request('a', 1)));
    expect([wide.state, second.state]).toEqual(['executing', 'waiting']);
    expect(ticketOf(narrow.enqueue(request('b', 1))).state).toBe('executing');
  });

  test('alone, a flow takes every seat its level has; while a light flow is at work it holds at most its seat limit', () => {
    jest.useFakeTimers();
    try {
      const c = clock();
      const config = {
        queuing: { queues: 16, handSize: 4, queueLengthLimit: 50 },
        concurrencyLimit: 100,
        flowHeadroom: 3,
        flowSeatLimit: 2,
      };
      // The light flow's time running out makes the level dispatch again.
      const activity = new FlowActivity(2, 1000, () => qs.redispatch());
      const qs = new QueueSet(config, c.now, activity);
      const flood = Array.from({ length: 4 }, () => ticketOf(qs.enqueue(request('flood'))));
      expect(flood.map((t) => t.state)).toEqual(['executing', 'executing', 'executing', 'executing']);
      // A light flow (one asking for no more than the bound) comes: the flood's next requests wait.
      const quiet = ticketOf(qs.enqueue(request('quiet')));
      expect(quiet.state).toBe('executing');
      const more = [ticketOf(qs.enqueue(request('flood'))), ticketOf(qs.enqueue(request('flood')))];
      expect(more.map((t) => t.state)).toEqual(['waiting', 'waiting']);
      // Its own ending below the bound lets one more of its own in.
      for (const t of flood.slice(0, 3)) qs.finish(t);
      expect(more.map((t) => t.state).sort()).toEqual(['executing', 'waiting']);
      // The light flow is done, but counts as at work for its window: then the flood takes the seats again.
      qs.finish(quiet);
      expect(more.map((t) => t.state).sort()).toEqual(['executing', 'waiting']);
      jest.advanceTimersByTime(1000);
      expect(more.map((t) => t.state)).toEqual(['executing', 'executing']);
    } finally {
      jest.useRealTimers();
    }
  });

  test('a bystander (a health probe, an anonymous request) never makes its flow one at work: a flow alone keeps every seat while they come', () => {
    const c = clock();
    const activity = new FlowActivity(2, 1000, () => {});
    const exempt = new QueueSet({ exempt: true, concurrencyLimit: 0 }, c.now, activity);
    const qs = new QueueSet(
      { queuing: { queues: 16, handSize: 4, queueLengthLimit: 50 }, concurrencyLimit: 100, flowSeatLimit: 2 },
      c.now,
      activity,
    );
    const flood = Array.from({ length: 3 }, () => ticketOf(qs.enqueue(request('flood'))));
    // An anonymous /healthz, in the exempt level: the flood's next request still runs at once.
    const probe = ticketOf(exempt.enqueue({ ...request('system:anonymous'), bystander: true }));
    expect(probe.state).toBe('executing');
    expect(ticketOf(qs.enqueue(request('flood'))).state).toBe('executing');
    exempt.finish(probe);
    // A request of that flow that is no bystander (one with credentials) is a light flow at work: now the flood waits.
    const other = ticketOf(exempt.enqueue(request('system:anonymous')));
    expect(ticketOf(qs.enqueue(request('flood'))).state).toBe('waiting');
    exempt.finish(other);
    for (const t of flood) qs.finish(t);
  });

  test('alone, a flow takes the headroom too; once another flow is at work it leaves it', () => {
    jest.useFakeTimers();
    try {
      const c = clock();
      const config = {
        queuing: { queues: 16, handSize: 4, queueLengthLimit: 50 },
        concurrencyLimit: 10,
        flowHeadroom: 3,
      };
      const activity = new FlowActivity(0, 1000, () => qs.redispatch());
      const qs = new QueueSet(config, c.now, activity);
      const flood = Array.from({ length: 12 }, () => ticketOf(qs.enqueue(request('flood'))));
      // Every seat of the level, the headroom included.
      expect(flood.filter((t) => t.state === 'executing')).toHaveLength(10);
      // Another flow: it waits for a seat to free (nothing is taken back), and the flood's next ones leave it 3.
      const other = ticketOf(qs.enqueue(request('other')));
      expect(other.state).toBe('waiting');
      qs.finish(flood[0]);
      expect(other.state).toBe('executing');
      for (const t of flood.slice(1, 4)) qs.finish(t);
      expect(flood.filter((t) => t.state === 'executing')).toHaveLength(7);
      expect(flood.filter((t) => t.state === 'waiting')).toHaveLength(1);
      // The other flow done, it still counts for its window; then the flood takes the headroom again.
      qs.finish(other);
      expect(flood.filter((t) => t.state === 'waiting')).toHaveLength(1);
      jest.advanceTimersByTime(1000);
      expect(qs.seatsInUse).toBe(8);
      expect(flood.filter((t) => t.state === 'waiting')).toHaveLength(0);
    } finally {
      jest.useRealTimers();
    }
  });

  test('flows that each ask for more than the bound share the level by fair queuing alone; a wider request runs alone', () => {
    const c = clock();
    const config = {
      queuing: { queues: 16, handSize: 4, queueLengthLimit: 50 },
      concurrencyLimit: 100,
      flowHeadroom: 3,
      flowSeatLimit: 2,
    };
    const qs = new QueueSet(config, c.now, new FlowActivity(2, 1000, () => {}));
    const a = Array.from({ length: 4 }, () => ticketOf(qs.enqueue(request('a'))));
    const b = Array.from({ length: 4 }, () => ticketOf(qs.enqueue(request('b'))));
    expect([...a, ...b].every((t) => t.state === 'executing')).toBe(true);
    expect(qs.seatsInUse).toBe(8);

    // A request wider than the limit starts when its flow holds nothing, and then runs alone.
    const wide = new QueueSet({ ...config, concurrencyLimit: 10 }, c.now);
    const list = ticketOf(wide.enqueue(request('a', 8)));
    const next = ticketOf(wide.enqueue(request('a', 1)));
    expect([list.state, next.state]).toEqual(['executing', 'waiting']);
    wide.finish(list);
    expect(next.state).toBe('executing');
  });

  test("a request waiting on another server keeps its level's seats but not its flow's, until it is back", () => {
    const c = clock();
    const config = {
      queuing: { queues: 16, handSize: 4, queueLengthLimit: 50 },
      concurrencyLimit: 4,
      flowSeatLimit: 2,
    };
    // A light flow at work elsewhere keeps the bound on.
    const activity = new FlowActivity(2, 1000, () => {});
    activity.arrived('fs\0someone', 1);
    const qs = new QueueSet(config, c.now, activity);
    const [slowA, slowB, third, fourth] = Array.from({ length: 4 }, () => ticketOf(qs.enqueue(request('tenant'))));
    expect([third.state, fourth.state]).toEqual(['waiting', 'waiting']);
    // Both of its first two wait on a slow cluster: two more of its own start, in seats the level still counts.
    qs.stepAway(slowA);
    expect([third.state, fourth.state].sort()).toEqual(['executing', 'waiting']);
    qs.stepAway(slowB);
    expect([third.state, fourth.state]).toEqual(['executing', 'executing']);
    expect(qs.seatsInUse).toBe(4);
    const fifth = ticketOf(qs.enqueue(request('tenant')));
    expect(fifth.state).toBe('waiting');
    // Back, they count again: the flow holds 4, over its bound, and its next waits until it holds 1.
    qs.stepBack(slowA);
    qs.stepBack(slowB);
    qs.finish(third);
    qs.finish(slowA);
    expect(fifth.state).toBe('waiting');
    qs.finish(fourth);
    expect(fifth.state).toBe('executing');
    // One that ends while away gives back its level's seats only; stepping back after the end changes nothing.
    qs.stepAway(slowB);
    qs.finish(slowB);
    qs.stepBack(slowB);
    qs.finish(fifth);
    expect(qs.seatsInUse).toBe(0);
    const fresh = Array.from({ length: 3 }, () => ticketOf(qs.enqueue(request('tenant'))));
    expect(fresh.map((t) => t.state)).toEqual(['executing', 'executing', 'waiting']);
  });

  test('a full queue rejects, but not seats taken again; a level that rejects refuses past its seats; the exempt level never queues', () => {
    const c = clock();
    const queued = new QueueSet(
      { queuing: { queues: 1, handSize: 1, queueLengthLimit: 1 }, concurrencyLimit: 1 },
      c.now,
    );
    expect('dispatched' in queued.enqueue(request('a'))).toBe(true);
    expect('queued' in queued.enqueue(request('a'))).toBe(true);
    expect(queued.enqueue(request('b'))).toEqual({ rejected: 'queue-full' });
    expect(queued.totals.rejected['queue-full']).toBe(1);
    // Seats taken again for an answer's next piece: let in once, the request is not refused for a full queue.
    expect('queued' in queued.enqueue({ ...request('b'), admitted: true })).toBe(true);

    const rejecting = new QueueSet({ concurrencyLimit: 2 }, c.now);
    expect('dispatched' in rejecting.enqueue(request('a', 2))).toBe(true);
    expect(rejecting.enqueue(request('b'))).toEqual({ rejected: 'concurrency-limit' });

    const exempt = new QueueSet({ exempt: true, concurrencyLimit: 0 }, c.now);
    for (let i = 0; i < 100; i++) expect('dispatched' in exempt.enqueue(request(`u${i}`, 5))).toBe(true);
    expect(exempt.waiting).toBe(0);
  });

  test('a waiting request that gives up leaves its queue; a wide request waits for seats, and one wider than the limit runs alone', () => {
    const c = clock();
    const qs = new QueueSet({ queuing: { queues: 4, handSize: 2, queueLengthLimit: 10 }, concurrencyLimit: 3 }, c.now);
    const narrow = ticketOf(qs.enqueue(request('a', 2)));
    const wide = ticketOf(qs.enqueue(request('b', 3)));
    const gone = ticketOf(qs.enqueue(request('c', 1)));
    expect([narrow.state, wide.state, gone.state]).toEqual(['executing', 'waiting', 'waiting']);
    expect(qs.cancel(gone, 'time-out')).toBe(true);
    expect(qs.cancel(gone, 'time-out')).toBe(false);
    expect(qs.totals.rejected['time-out']).toBe(1);
    c.advance(50);
    qs.finish(narrow);
    expect(wide.state).toBe('executing');
    const huge = ticketOf(qs.enqueue(request('d', 10)));
    expect(huge.state).toBe('waiting');
    qs.finish(wide);
    expect(huge.state).toBe('executing');
    expect(qs.seatsInUse).toBe(10);
  });

  test('seat demand: average, spread and high watermark of the period, by time held', () => {
    const c = clock();
    const qs = new QueueSet({ queuing: { queues: 1, handSize: 1, queueLengthLimit: 10 }, concurrencyLimit: 1 }, c.now);
    const first = ticketOf(qs.enqueue(request('a')));
    qs.enqueue(request('a'));
    c.advance(1000);
    qs.finish(first);
    c.advance(1000);
    // 2 seats wanted for 1 s, then 1 for 1 s.
    expect(qs.takeDemand()).toEqual({ average: 1.5, stddev: 0.5, highWatermark: 2 });
  });
});

describe('dividing the server seats', () => {
  test("the built-in levels' nominal seats, lower and upper bounds (kube's numbers for 600 seats)", () => {
    const fc = builtIn(600);
    const bounds = Object.fromEntries(fc.levels().map((l) => [l.name, l.bounds]));
    // 245 shares in all: ceil(600 * shares / 245).
    expect(bounds['global-default']).toEqual({ nominal: 49, lower: 24, upper: 649 });
    expect(bounds['workload-low']).toEqual({ nominal: 245, lower: 24, upper: 845 });
    expect(bounds['leader-election']).toEqual({ nominal: 25, lower: 25, upper: 625 });
    expect(bounds['catch-all']).toEqual({ nominal: 13, lower: 13, upper: 613 });
    expect(bounds.exempt).toEqual({ nominal: 0, lower: 0, upper: 0 });
  });

  test('a busy level borrows what idle levels may lend, never past its upper bound, and the total stays', () => {
    const pl = (name: string, shares: number, lendablePercent: number, borrowingLimitPercent?: number) =>
      ({
        metadata: { name },
        spec: {
          type: 'Limited',
          limited: {
            nominalConcurrencyShares: shares,
            lendablePercent,
            borrowingLimitPercent,
            limitResponse: { type: 'Reject' },
          },
        },
      }) as PriorityLevelConfiguration;
    const bounds = levelBounds(100, [pl('busy', 50, 0, 50), pl('idle', 50, 80)]);
    expect(bounds.get('busy')).toEqual({ nominal: 50, lower: 50, upper: 75 });
    expect(bounds.get('idle')).toEqual({ nominal: 50, lower: 10, upper: 150 });
    const limits = allocate([
      {
        bounds: bounds.get('busy')!,
        demand: { average: 200, stddev: 0, highWatermark: 200 },
        state: { smoothed: 0 },
        exempt: false,
      },
      {
        bounds: bounds.get('idle')!,
        demand: { average: 0, stddev: 0, highWatermark: 0 },
        state: { smoothed: 0 },
        exempt: false,
      },
    ]);
    expect(limits).toEqual([75, 25]);
    expect(
      fairAllocation(10, [
        { lower: 1, upper: 10, target: 1 },
        { lower: 1, upper: 10, target: 4 },
      ]),
    ).toEqual([2, 8]);
  });

  test('every adjustment period a busy level borrows what an idle one lends, and its waiting requests run', () => {
    let now = 0;
    const fc = new FlowControl(10, silent, () => now);
    const level = (name: string, lendablePercent: number): PriorityLevelConfiguration => ({
      metadata: { name },
      spec: {
        type: 'Limited',
        limited: {
          nominalConcurrencyShares: 50,
          lendablePercent,
          limitResponse: { type: 'Queue', queuing: { queues: 4, handSize: 1, queueLengthLimit: 10 } },
        },
      },
    });
    fc.configure([], [level('busy', 0), level('idle', 100)]);
    const busy = fc.levels().find((l) => l.name === 'busy')!;
    expect(busy.bounds).toEqual({ nominal: 5, lower: 5, upper: 15 });
    for (let i = 0; i < 10; i++)
      busy.queueSet.enqueue({ flowSchema: 'fs', distinguisher: `u${i}`, seats: 1, onDispatch() {} });
    expect([busy.queueSet.executing, busy.queueSet.waiting]).toEqual([5, 5]);
    now += 10_000;
    fc.adjust();
    const limits = Object.fromEntries(fc.levels().map((l) => [l.name, l.queueSet.concurrencyLimit]));
    expect(limits).toEqual({ exempt: 0, 'catch-all': 1, busy: 10, idle: 0 });
    expect([busy.queueSet.executing, busy.queueSet.waiting]).toEqual([10, 0]);
  });
});

describe('seats and waits', () => {
  const count = (_group: string, resource: string) => (resource === 'clusters' ? 250 : undefined);
  const info = { isResourceRequest: true, apiGroup: 'g', resource: 'clusters', namespace: '', name: '' };
  const q = (s = '') => new URLSearchParams(s);

  test("a list takes a seat per 100 objects, up to its level's most; a get, a named list, a plain watch one", () => {
    const sources = { objects: count, watches: () => 0 };
    const seats = (i: Partial<typeof info> & { verb: string }, query = q(), max = 10) =>
      estimateWork({ ...info, ...i }, query, sources, max).seats;
    expect(seats({ verb: 'list' })).toBe(3);
    expect(seats({ verb: 'list' }, q(), 2)).toBe(2);
    expect(seats({ verb: 'list' }, q('fieldSelector=metadata.name%3Dx'))).toBe(1);
    expect(seats({ verb: 'list', resource: 'unknown' })).toBe(1);
    expect(seats({ verb: 'watch' })).toBe(1);
    expect(seats({ verb: 'watch' }, q('sendInitialEvents=true'))).toBe(3);
    expect(seats({ verb: 'get', name: 'a' })).toBe(1);
    expect([levelMaxSeats(1), levelMaxSeats(49), levelMaxSeats(1000)]).toEqual([1, 8, 150]);
  });

  test('a write seen by 10 or more watches holds a seat per 10 of them a little after its answer', () => {
    const watches = new WatchTracker();
    const sources = {
      objects: count,
      watches: (i: Parameters<WatchTracker['interested']>[0]) => watches.interested(i),
    };
    const write = { ...info, verb: 'update', namespace: 'a', name: 'x' };
    const forgets = [
      ...Array.from({ length: 9 }, () => watches.register({ ...info, namespace: '' }, q())),
      watches.register({ ...info, namespace: 'a' }, q()),
      watches.register({ ...info, namespace: 'a' }, q('fieldSelector=metadata.name%3Dx')),
      // Not interested: another namespace, another object, another resource.
      watches.register({ ...info, namespace: 'b' }, q()),
      watches.register({ ...info, namespace: 'a', name: 'y' }, q()),
      watches.register({ ...info, resource: 'other' }, q()),
    ];
    expect(watches.interested(write)).toBe(11);
    expect(estimateWork(write, q(), sources, 10)).toEqual({ seats: 2, additionalLatencyMs: 5 });
    // Capped at the level's most: the same work, narrower and longer.
    expect(estimateWork(write, q(), sources, 1)).toEqual({ seats: 1, additionalLatencyMs: 10 });
    forgets[0]();
    forgets[0]();
    expect(watches.interested(write)).toBe(10);
    forgets[1]();
    expect(estimateWork(write, q(), sources, 10)).toEqual({ seats: 1, additionalLatencyMs: 0 });
    expect(estimateWork({ ...write, verb: 'get' }, q(), sources, 10).seats).toBe(1);
  });

  test("kube's wait limit: a quarter of the deadline, at most a minute", () => {
    expect(waitLimit(60_000, 60_000)).toBe(15_000);
    expect(waitLimit(2000, 60_000)).toBe(500);
    expect(waitLimit(0, 60_000)).toBe(15_000);
    expect(waitLimit(0, 0)).toBe(15_000);
    expect(waitLimit(600_000, 600_000)).toBe(60_000);
  });

  test('--enable-priority-and-fairness needs seats to share', () => {
    expect(parseFlags([])?.enablePriorityAndFairness).toBe(true);
    expect(() => parseFlags(['--max-requests-inflight=0', '--max-mutating-requests-inflight=0'])).toThrow(
      /must be positive with --enable-priority-and-fairness/,
    );
    expect(
      parseFlags([
        '--max-requests-inflight=0',
        '--max-mutating-requests-inflight=0',
        '--enable-priority-and-fairness=false',
      ])?.enablePriorityAndFairness,
    ).toBe(false);
  });
});
