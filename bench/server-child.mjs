// The API server for the benchmark, in its own process (own event loop, own CPU accounting), started from the
// built dist/ with the same startServer the real binary uses. Forked by list-get-watch.mjs with an IPC channel:
// it sends {type: 'ready', url, caPem, token, pid} once serving; answers 'stats' with its memory and CPU; 'gc'
// (when started with --expose-gc) by collecting garbage and answering with its memory, V8's heap statistics and
// its proportional set size (pss);
// {type: 'profile', action: 'start' | 'stop', file} starts or stops the V8 CPU profiler (the profile of one
// benchmark phase, written as a .cpuprofile that Chrome DevTools and bench/profile-summary.mjs read); and on
// 'stop' it closes the server and exits. BENCH_SERVER_FLAGS (a JSON array of command-line flags, as dist/main.js
// takes them) comes under BENCH_SERVER_CONFIG's settings; flags this server does not know make it send
// {type: 'flag-error', message} and exit with 2, as main.js does. Without a generated admin token (a
// --token-auth-file among the settings) `token` is undefined.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import { pssBytes } from './pss.mjs';

const dist = process.env.BENCH_DIST
  ? pathToFileURL(resolve(process.env.BENCH_DIST) + '/')
  : new URL('../dist/', import.meta.url);
const { startServer } = await import(new URL('server.js', dist).href);
const { FlagError, parseFlags } = await import(new URL('config.js', dist).href);
const { silentLogger } = await import(new URL('log.js', dist).href);

const overrides = JSON.parse(process.env.BENCH_SERVER_CONFIG ?? '{}');
let flagged;
try {
  flagged = parseFlags(JSON.parse(process.env.BENCH_SERVER_FLAGS ?? '[]'));
} catch (err) {
  if (!(err instanceof FlagError)) throw err;
  process.send({ type: 'flag-error', message: err.message }, () => process.exit(2));
  await new Promise(() => {}); // the IPC channel keeps the process until the message is out
}
const config = { ...flagged, ...overrides };
const server = await startServer(config, silentLogger);
const tokenFile = join(config.dataDir, 'admin-token');
const token = existsSync(tokenFile) ? readFileSync(tokenFile, 'utf8').trim() : undefined;
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
      pss: pssBytes(),
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
