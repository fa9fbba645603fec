// This process's proportional set size, for the server processes' memory answers (server-child.mjs, server-probe.mjs).
import { readFileSync } from 'node:fs';

/** This process's proportional set size (its RSS with each shared page split among its sharers), or undefined. */
export function pssBytes() {
  try {
    const kb = /^Pss:\s+(\d+) kB/m.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'))?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  } catch {
    return undefined;
  }
}
