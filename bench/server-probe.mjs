// Loaded into the server's primary and each of its workers (`node --import`; node:cluster gives workers the primary's
// Node flags) when the scale benchmark runs `dist/main.js --workers N`, whose processes have no IPC channel to the
// benchmark: on SIGUSR2 it writes this process's memory to $BENCH_PROBE_DIR/<pid>.json, after two forced GCs when
// $BENCH_PROBE_DIR/ask says `gc` (the server-child's 'stats' and 'gc' answers, per process). It first writes
// <pid>.ready, so that no process is sent SIGUSR2 before it has a handler (which would end it).
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import v8 from 'node:v8';
import { pssBytes } from './pss.mjs';

const dir = process.env.BENCH_PROBE_DIR;

if (dir) {
  process.on('SIGUSR2', () => {
    const ask = readFileSync(join(dir, 'ask'), 'utf8').trim();
    if (ask === 'gc') {
      // Twice: the first full GC can leave garbage that finalizers or weak references freed only during it.
      globalThis.gc?.();
      globalThis.gc?.();
    }
    const answer = {
      pid: process.pid,
      collected: ask === 'gc' && !!globalThis.gc,
      memory: process.memoryUsage(),
      heap: v8.getHeapStatistics(),
      pss: pssBytes(),
    };
    const file = join(dir, `${process.pid}.json`);
    writeFileSync(`${file}.tmp`, JSON.stringify(answer));
    renameSync(`${file}.tmp`, file); // whole or not at all for the reader
  });
  writeFileSync(join(dir, `${process.pid}.ready`), '');
}
