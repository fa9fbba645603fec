#!/usr/bin/env node
// Summarises a V8 .cpuprofile (from `list-get-watch.mjs --profile DIR`): where the server's CPU went, as self
// time per function and inclusive time of the project's own functions. Usage:
//   node bench/profile-summary.mjs DIR/07-watch-100-writes-s-to-1000-watchers.cpuprofile [top=25]
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/profile-summary.mjs FILE.cpuprofile [top]');
  process.exit(2);
}
const top = Number(topArg ?? 25);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i];
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const idleIds = new Set(profile.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
const idle = [...idleIds].reduce((a, id) => a + (self.get(id) ?? 0), 0);

const where = (cf) => {
  const url = cf.url.replace(/^file:\/\/.*?\/(dist|node_modules)\//, '$1/').replace(/^node:/, 'node:');
  return `${cf.functionName || '(anonymous)'} ${url ? `${url}:${cf.lineNumber + 1}` : ''}`.trim();
};

// Self time per function.
const bySelf = new Map();
for (const [id, t] of self) {
  if (idleIds.has(id)) continue;
  const key = where(nodes.get(id).callFrame);
  bySelf.set(key, (bySelf.get(key) ?? 0) + t);
}

// Inclusive time per function (counted once per stack even when recursive).
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const inclusive = new Map();
for (const [id, t] of self) {
  if (idleIds.has(id)) continue;
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const key = where(nodes.get(cur).callFrame);
    if (seen.has(key)) continue;
    seen.add(key);
    inclusive.set(key, (inclusive.get(key) ?? 0) + t);
  }
}

// Inclusive time per package: a sample counts for every package on its stack (so shares overlap).
const pkgOf = (cf) => {
  const m = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(cf.url);
  if (m) return m[1];
  if (/\/dist\//.test(cf.url)) return 'dist/ (the server)';
  if (cf.url.startsWith('node:')) return 'node: internals';
  return undefined;
};
const byPackage = new Map();
for (const [id, t] of self) {
  if (idleIds.has(id)) continue;
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const pkg = pkgOf(nodes.get(cur).callFrame);
    if (!pkg || seen.has(pkg)) continue;
    seen.add(pkg);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + t);
  }
}

const busy = total - idle;
const ms = (us) => (us / 1000).toFixed(0).padStart(7);
const share = (us) => `${((100 * us) / busy).toFixed(1).padStart(5)}%`;
console.log(
  `${file}\nprofiled ${ms(total)} ms, busy ${ms(busy)} ms (${((100 * busy) / total).toFixed(0)}% of the wall time)\n`,
);
console.log(`Top ${top} by self time (share of busy time):`);
for (const [k, t] of [...bySelf].sort((a, b) => b[1] - a[1]).slice(0, top))
  console.log(`${ms(t)} ms ${share(t)}  ${k}`);
console.log(`\nTop ${top} of the server's own code (dist/) by inclusive time:`);
for (const [k, t] of [...inclusive]
  .filter(([k]) => k.includes(' dist/'))
  .sort((a, b) => b[1] - a[1])
  .slice(0, top))
  console.log(`${ms(t)} ms ${share(t)}  ${k}`);
console.log('\nInclusive time by package (a sample counts for every package on its stack):');
for (const [k, t] of [...byPackage].sort((a, b) => b[1] - a[1]).slice(0, 12))
  console.log(`${ms(t)} ms ${share(t)}  ${k}`);
