/**
 * A kind's read view as a store applies it (registry/readview.ts), with the Cluster's (kinds/cluster/freshness.ts)
 * and the VirtualClusterInstance's (kinds/virtualclusterinstance/freshness.ts), both made by kinds/overdue.ts.
 */
import { describe, expect, test } from '@jest/globals';
import { EncodedObject } from '../../src/apimachinery/encoded.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { CHECK_OVERDUE, clusterReadView } from '../../src/kinds/cluster/freshness.js';
import { virtualClusterReadView } from '../../src/kinds/virtualclusterinstance/freshness.js';
import { noKindSettings, type KindSettings } from '../../src/registry/kindsettings.js';
import { StoreView, type ReadView } from '../../src/registry/readview.js';

const INTERVAL_MS = 30_000;
const CHECKED = Date.parse('2025-05-01T10:00:00Z');
const connected = { type: 'Ready', status: 'True', reason: 'Connected', message: 'ok', lastTransitionTime: 'x' };

function cluster(lastCheckTime?: string): KubeObject {
  return {
    apiVersion: 'management.platform.sh/v1',
    kind: 'Cluster',
    metadata: { name: 'c', resourceVersion: '7' },
    status: {
      phase: 'Initialized',
      ...(lastCheckTime ? { lastCheckTime } : {}),
      conditions: [{ type: 'AccessSynced', status: 'True' }, connected],
    },
  };
}

const ready = (obj: any) => obj.status.conditions.find((c: any) => c.type === 'Ready');

function settings(intervals: Partial<KindSettings>): KindSettings {
  return { ...noKindSettings, ...intervals };
}

function viewAt(now: { ms: number }): StoreView {
  return new StoreView(clusterReadView(settings({ clusterHealthIntervalMs: INTERVAL_MS }))!, () => now.ms);
}

describe('the Cluster read view', () => {
  test('until 3 intervals after the last check a read is the stored object itself; then Ready is Unknown/CheckOverdue', () => {
    const now = { ms: CHECKED + 3 * INTERVAL_MS - 1 };
    const view = viewAt(now);
    const stored = cluster('2025-05-01T10:00:00.000000Z');
    expect(view.of(stored)).toBe(stored);
    now.ms += 1;
    const seen = view.of(stored) as any;
    expect(seen).not.toBe(stored);
    expect(ready(seen)).toMatchObject({
      status: 'Unknown',
      reason: CHECK_OVERDUE,
      lastTransitionTime: '2025-05-01T10:01:30Z',
    });
    expect(ready(seen).message).toContain('since 2025-05-01T10:00:00.000000Z');
    expect(seen.status.conditions).toHaveLength(2);
    expect(seen.metadata).toBe(stored.metadata);
    // The stored object is untouched.
    expect(ready(stored)).toBe(connected);
  });

  test('never stamped, or checks off: read as stored', () => {
    const view = viewAt({ ms: CHECKED + 100 * INTERVAL_MS });
    const stored = cluster();
    expect(view.of(stored)).toBe(stored);
    expect(clusterReadView(settings({ virtualClusterHealthIntervalMs: INTERVAL_MS }))).toBeUndefined();
  });

  test('an encoded list item stays encoded until the view applies, and is decoded once per object', () => {
    let asked = 0;
    const counting: ReadView = {
      derivedFrom: () => (asked++, CHECKED),
      derive: (obj) => ({ ...obj, derived: true }),
      underive: () => {},
    };
    const now = { ms: CHECKED - 1 };
    const view = new StoreView(counting, () => now.ms);
    const item = new EncodedObject(JSON.stringify(cluster()));
    expect(view.ofItem(item)).toBe(item);
    expect(view.ofItem(item)).toBe(item);
    now.ms = CHECKED;
    expect(view.ofItem(item)).toMatchObject({ derived: true });
    expect(asked).toBe(1);
  });

  test('a written CheckOverdue condition is the stored one again; other conditions are left as written', () => {
    const now = { ms: CHECKED + 4 * INTERVAL_MS };
    const view = viewAt(now);
    const stored = cluster('2025-05-01T10:00:00.000000Z');
    const written = structuredClone(view.of(stored));
    (written.status as any).conditions[0].status = 'False';
    view.underive(written, stored);
    expect(ready(written)).toEqual(connected);
    expect((written.status as any).conditions[0]).toEqual({ type: 'AccessSynced', status: 'False' });
    const none = structuredClone(view.of(stored));
    const withoutReady = { ...stored, status: { ...(stored.status as any), conditions: [] } };
    view.underive(none, withoutReady);
    expect(ready(none)).toBeUndefined();
  });
});

const online = {
  type: 'VirtualClusterOnline',
  status: 'True',
  reason: 'Online',
  message: 'answers',
  observedGeneration: 2,
};

function instance(status: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'management.platform.sh/v1',
    kind: 'VirtualClusterInstance',
    metadata: { name: 'vc', namespace: 'p-web', resourceVersion: '9', generation: 2 },
    status: {
      online: true,
      kubernetesVersion: 'v1.33.1',
      lastCheckTime: '2025-05-01T10:00:00Z',
      conditions: [online],
      ...status,
    },
  };
}

const onlineOf = (obj: any) => obj.status.conditions.find((c: any) => c.type === 'VirtualClusterOnline');

function instanceViewAt(now: { ms: number }): StoreView {
  return new StoreView(
    virtualClusterReadView(settings({ virtualClusterHealthIntervalMs: INTERVAL_MS }))!,
    () => now.ms,
  );
}

describe('the VirtualClusterInstance read view', () => {
  test('3 intervals after the last check, phase and VirtualClusterOnline read as Unknown/CheckOverdue, the rest as stored', () => {
    const now = { ms: CHECKED + 3 * INTERVAL_MS - 1 };
    const view = instanceViewAt(now);
    const stored = instance({ phase: 'Ready' });
    expect(view.of(stored)).toBe(stored);
    now.ms += 1;
    const seen = view.of(stored) as any;
    expect(onlineOf(seen)).toMatchObject({
      status: 'Unknown',
      reason: CHECK_OVERDUE,
      observedGeneration: 2,
      lastTransitionTime: '2025-05-01T10:01:30Z',
    });
    expect(onlineOf(seen).message).toContain('since 2025-05-01T10:00:00Z (more than 3 check intervals of 30s)');
    expect(onlineOf(seen).message).toContain('the last check found it Ready');
    expect(seen.status).toMatchObject({
      phase: 'Unknown',
      reason: CHECK_OVERDUE,
      message: onlineOf(seen).message,
      online: true,
      kubernetesVersion: 'v1.33.1',
      lastCheckTime: '2025-05-01T10:00:00Z',
    });
    expect(seen.status.conditions).toHaveLength(1);
    expect(stored.status).toMatchObject({ phase: 'Ready', conditions: [online] });
    expect(stored.status.reason).toBeUndefined();
  });

  test('the message names what the last check found when it was not Ready', () => {
    const view = instanceViewAt({ ms: CHECKED + 4 * INTERVAL_MS });
    const seen = view.of(instance({ phase: 'Failed', reason: 'ConnectionNotFound', message: 'no Secret' })) as any;
    expect(seen.status.message).toContain('the last check found it Failed (ConnectionNotFound)');
    expect(seen.status.reason).toBe(CHECK_OVERDUE);
  });

  test('never checked, or checks off: read as stored; the Cluster interval gives instances no view', () => {
    const view = instanceViewAt({ ms: CHECKED + 100 * INTERVAL_MS });
    const unchecked = instance({ lastCheckTime: undefined, conditions: [] });
    expect(view.of(unchecked)).toBe(unchecked);
    expect(virtualClusterReadView(settings({ clusterHealthIntervalMs: INTERVAL_MS }))).toBeUndefined();
  });

  test('a status written back as read is the stored one again: phase, reason, message and the condition', () => {
    const view = instanceViewAt({ ms: CHECKED + 4 * INTERVAL_MS });
    const ready = instance({ phase: 'Ready' });
    const written = structuredClone(view.of(ready));
    view.underive(written, ready);
    expect(written.status).toEqual(ready.status);
    const failed = instance({
      phase: 'Failed',
      reason: 'VirtualClusterUnreachable',
      message: 'no answer',
      conditions: [{ type: 'VirtualClusterOnline', status: 'False', reason: 'VirtualClusterUnreachable' }],
    });
    const back = structuredClone(view.of(failed));
    view.underive(back, failed);
    expect(back.status).toEqual(failed.status);
  });
});
