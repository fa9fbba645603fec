/** A kind's read view as a store applies it (registry/readview.ts), with the Cluster's (kinds/cluster/freshness.ts). */
import { describe, expect, test } from '@jest/globals';
import { EncodedObject } from '../../src/apimachinery/encoded.js';
import type { KubeObject } from '../../src/apimachinery/types.js';
import { CHECK_OVERDUE, clusterReadView } from '../../src/kinds/cluster/freshness.js';
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

function viewAt(now: { ms: number }): StoreView {
  return new StoreView(clusterReadView({ clusterHealthIntervalMs: INTERVAL_MS, now: () => now.ms })!, () => now.ms);
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
    expect(clusterReadView({ clusterHealthIntervalMs: 0, now: Date.now })).toBeUndefined();
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
