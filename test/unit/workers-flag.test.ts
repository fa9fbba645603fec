/** --workers (src/config.ts) and the cores a process may use (src/cpus.ts): the cgroup's CPU limit first. */
import { expect, test } from '@jest/globals';
import { availableParallelism } from 'node:os';
import { parseFlags } from '../../src/config.js';
import { cgroupLimit, usableCores } from '../../src/cpus.js';

const files = (entries: Record<string, string>) => (path: string) => entries[path];

test('--workers is 1 unless set: one process serves, as before the flag', () => {
  expect(parseFlags([])!.workers).toBe(1);
  expect(parseFlags(['--workers=3'])!.workers).toBe(3);
  expect(parseFlags(['--workers', '1'])!.workers).toBe(1);
});

test('--workers=auto takes the cores this process may use', () => {
  expect(parseFlags(['--workers=auto'])!.workers).toBe(usableCores());
});

test('--workers refuses what is not 1 to 64 or auto, saying what it takes', () => {
  for (const bad of ['0', '-1', '1.5', 'two', '65', ''])
    expect(() => parseFlags([`--workers=${bad}`])).toThrow(
      `--workers must be a whole number from 1 to 64, or auto (got ${JSON.stringify(bad)})`,
    );
});

test("cgroup v2's cpu.max: a quota over a period in cores; `max` is no limit", () => {
  expect(cgroupLimit(files({ '/sys/fs/cgroup/cpu.max': '150000 100000\n' }))).toBe(1.5);
  expect(cgroupLimit(files({ '/sys/fs/cgroup/cpu.max': 'max 100000\n' }))).toBeUndefined();
});

test("cgroup v1's cfs quota over its period; -1 is no limit; no cgroup files, no limit", () => {
  const v1 = (quota: string) =>
    files({ '/sys/fs/cgroup/cpu/cpu.cfs_quota_us': quota, '/sys/fs/cgroup/cpu/cpu.cfs_period_us': '100000\n' });
  expect(cgroupLimit(v1('200000\n'))).toBe(2);
  expect(cgroupLimit(v1('-1\n'))).toBeUndefined();
  expect(cgroupLimit(files({}))).toBeUndefined();
});

test('the usable cores are the limit rounded up, at least 1, never more than the machine gives', () => {
  const cores = availableParallelism();
  expect(usableCores(files({ '/sys/fs/cgroup/cpu.max': '50000 100000' }))).toBe(1);
  expect(usableCores(files({ '/sys/fs/cgroup/cpu.max': '1000 100000' }))).toBe(1);
  expect(usableCores(files({ '/sys/fs/cgroup/cpu.max': `${(cores + 4) * 100000} 100000` }))).toBe(cores);
  expect(usableCores(files({}))).toBe(cores);
});

test('an audit log file is refused with more than one worker (they cannot share its rotation); stdout is taken', () => {
  expect(() => parseFlags(['--workers=2', '--audit-log-path=/var/log/audit.log'])).toThrow(
    '--audit-log-path /var/log/audit.log with --workers 2: the workers cannot share one rotated file; use --audit-log-path=- (stdout) or --audit-webhook-config-file, or --workers=1',
  );
  expect(parseFlags(['--workers=2', '--audit-log-path=-'])!.auditLogPath).toBe('-');
  expect(parseFlags(['--audit-log-path=/var/log/audit.log'])!.workers).toBe(1);
});
