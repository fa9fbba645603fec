import { expect, test } from '@jest/globals';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { EtcdHealth, EtcdUnhealthyError } from '../../src/storage/etcdhealth.js';

function until(what: string, cond: () => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const tick = () =>
      cond() ? resolve() : Date.now() - started > 5000 ? reject(new Error(`no ${what}`)) : setTimeout(tick, 5);
    tick();
  });
}

test('calls pass while probes succeed; once one fails, waiting calls are given up and new ones refused; a good probe lets them through again', async () => {
  let answering = true;
  const changes: boolean[] = [];
  const health = new EtcdHealth({
    probe: () => (answering ? Promise.resolve() : new Promise(() => {})),
    intervalMs: 10,
    timeoutMs: 50,
    onChange: (healthy) => changes.push(healthy),
  });
  health.start();
  try {
    await expect(health.guard(async () => 'read')).resolves.toBe('read');
    answering = false;
    const waiting = health.guard(() => new Promise(() => {}));
    await expect(waiting).rejects.toThrow(EtcdUnhealthyError);
    await expect(waiting).rejects.toThrow(
      'etcd does not answer (no answer within 50 ms); calls fail at once until it does',
    );
    let called = false;
    await expect(
      health.guard(async () => {
        called = true;
      }),
    ).rejects.toThrow(EtcdUnhealthyError);
    expect(called).toBe(false);
    expect(health.isHealthy).toBe(false);

    answering = true;
    await until('recovery', () => health.isHealthy);
    await expect(health.guard(async () => 'again')).resolves.toBe('again');
    expect(changes).toEqual([false, true]);
  } finally {
    health.stop();
  }
});

test('a probe that rejects counts as failed, with its reason', async () => {
  const health = new EtcdHealth({ probe: () => Promise.reject(new Error('connection refused')), intervalMs: 10 });
  health.start();
  try {
    await until('failure', () => !health.isHealthy);
    await expect(health.guard(async () => 1)).rejects.toThrow('etcd does not answer (connection refused)');
  } finally {
    health.stop();
  }
});

test('a call that has settled leaves nothing behind: its result can be garbage-collected (no leak per etcd call)', async () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const health = new EtcdHealth({ probe: () => Promise.resolve(), intervalMs: 60_000 });
  health.start();
  try {
    const refs: WeakRef<object>[] = [];
    for (let i = 0; i < 100; i++) {
      const result = await health.guard(async () => ({ revision: i, payload: new Array(1000).fill(i) }));
      refs.push(new WeakRef(result));
    }
    // The last result can stay reachable from the stack a moment longer; give the collector a few turns.
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setImmediate(r));
      gc();
    }
    expect(refs.filter((r) => r.deref() !== undefined).length).toBeLessThanOrEqual(1);
  } finally {
    health.stop();
  }
});
