import { expect, test } from '@jest/globals';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
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

/** Both ends of a loopback TCP connection, and a way to close them. */
async function connection(): Promise<{ near: Socket; far: Socket; close: () => void }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
  const near = connect((server.address() as AddressInfo).port, '127.0.0.1');
  await new Promise((resolve) => near.once('connect', resolve));
  const far = await accepted;
  return {
    near,
    far,
    close: () => {
      near.destroy();
      far.destroy();
      server.close();
    },
  };
}

test("an answer that came while this process was too busy to read it counts: a stall of the server's own event loop is not etcd failing", async () => {
  // The far end of one connection stands for etcd; that of the other sets off work in this process.
  const etcd = await connection();
  const work = await connection();
  let probes = 0;
  const changes: boolean[] = [];
  const health = new EtcdHealth({
    timeoutMs: 50,
    intervalMs: 0,
    failuresToTrip: 1,
    probe: () => {
      if (++probes > 1) return Promise.resolve();
      return new Promise((resolve) => {
        etcd.near.once('data', resolve);
        // A request's I/O callback keeps this process busy past the deadline (as serializing a large list does),
        // and etcd's answer comes in meanwhile: it is there, unread, when the deadline's timer runs.
        work.near.once('data', () => {
          etcd.far.write('ok');
          const end = performance.now() + 200;
          while (performance.now() < end);
        });
        work.far.write('go');
      });
    },
    onChange: (healthy) => changes.push(healthy),
  });
  health.start();
  try {
    await until('a second probe', () => probes >= 2);
    expect({ changes, healthy: health.isHealthy }).toEqual({ changes: [], healthy: true });
  } finally {
    health.stop();
    etcd.close();
    work.close();
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
    // The last result can stay reachable from the stack a moment longer; give the collector a few turns (each a
    // full collection of the test worker's heap: seconds on a loaded machine, so no more than needed).
    const reachable = () => refs.filter((r) => r.deref() !== undefined).length;
    for (let i = 0; i < 5 && reachable() > 1; i++) {
      await new Promise((r) => setImmediate(r));
      gc();
    }
    expect(reachable()).toBeLessThanOrEqual(1);
  } finally {
    health.stop();
  }
}, 120_000);
