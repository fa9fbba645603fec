// The API server for the benchmark, in its own process (own event loop, own CPU accounting), started from the
// built dist/ with the same startServer the real binary uses. Forked by list-get-watch.mjs with an IPC channel:
// it sends {type: 'ready', url, caPem, token, pid} once serving; answers 'stats' with its memory and CPU; 'gc'
// (when started with --expose-gc) by collecting garbage and answering with its memory and V8's heap statistics;
// {type: 'profile', action: 'start' | 'stop', file} starts or stops the V8 CPU profiler (the profile of one
// benchmark phase, written as a .cpuprofile that Chrome DevTools and bench/profile-summary.mjs read); and on
// 'stop' it closes the server and exits.
import { readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';

const dist = process.env.BENCH_DIST
  ? pathToFileURL(resolve(process.env.BENCH_DIST) + '/')
  : new URL('../dist/', import.meta.url);
const { startServer } = await import(new URL('server.js', dist).href);
const { defaultConfig } = await import(new URL('config.js', dist).href);
const { silentLogger } = await import(new URL('log.js', dist).href);

const overrides = JSON.parse(process.env.BENCH_SERVER_CONFIG ?? '{}');
const config = { ...defaultConfig(), ...overrides };
const server = await startServer(config, silentLogger);
const token = readFileSync(join(config.dataDir, 'admin-token'), 'utf8').trim();
process.send({ type: 'ready', url: server.url, caPem: server.caPem, token, pid: process.pid });

let session;
const post = (method, params) =>
  new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));

// A benchmark that was killed leaves no server behind.
process.on('disconnect', () => process.exit(1));

process.on('message', async (msg) => {
  if (msg === 'stats') {
    process.send({ type: 'stats', memory: process.memoryUsage(), cpu: process.cpuUsage() });
  } else if (msg === 'gc') {
    // Twice: the first full GC can leave garbage that finalizers or weak references freed only during it.
    globalThis.gc?.();
    globalThis.gc?.();
    process.send({
      type: 'gc',
      collected: !!globalThis.gc,
      memory: process.memoryUsage(),
      heap: v8.getHeapStatistics(),
    });
  } else if (msg?.type === 'profile' && msg.action === 'start') {
    if (!session) {
      session = new Session();
      session.connect();
      await post('Profiler.enable');
      await post('Profiler.setSamplingInterval', { interval: 500 });
    }
    await post('Profiler.start');
    process.send({ type: 'profile' });
  } else if (msg?.type === 'profile' && msg.action === 'stop') {
    const { profile } = await post('Profiler.stop');
    writeFileSync(msg.file, JSON.stringify(profile));
    process.send({ type: 'profile' });
  } else if (msg === 'stop') {
    await server.close();
    process.exit(0);
  }
});
