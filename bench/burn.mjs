#!/usr/bin/env node
// A steady CPU burner: outside load for the scale benchmark (--burn-cores). `node bench/burn.mjs 0.5` keeps this
// process busy 0.5 of a core: in each period of about 10 ms it spins until its CPU time since the start reaches
// the fraction of the wall time (at most one period's worth at once, so a burner that was kept off the CPU does
// not catch up in one long burst), then sleeps the rest of the period. One process burns at most one core; the
// benchmark starts several for more. Ends with its parent (IPC disconnect) or on SIGTERM.
const fraction = Number(process.argv[2]);
if (!(fraction > 0 && fraction <= 1)) {
  console.error(`burn.mjs: the fraction of a core must be in (0, 1], got ${process.argv[2]}`);
  process.exit(2);
}
const PERIOD_MS = 10;
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const start = performance.now();
const cpu0 = cpuMs();
function period() {
  const t = performance.now();
  const owed = Math.min(PERIOD_MS * fraction, fraction * (t - start) - (cpuMs() - cpu0));
  const until = t + owed;
  while (performance.now() < until); // busy
  setTimeout(period, Math.max(0, PERIOD_MS - (performance.now() - t)));
}
period();
process.on('disconnect', () => process.exit(0));
