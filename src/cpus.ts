/**
 * How many cores this process may use: the cgroup's CPU limit where there is one (a container's limits.cpu),
 * rounded up, else the cores the OS gives it (os.availableParallelism). cgroup v2 says it in /sys/fs/cgroup/cpu.max
 * ("max 100000" is no limit), v1 in cpu.cfs_quota_us (-1 is no limit) over cpu.cfs_period_us.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';

export function usableCores(read: (path: string) => string | undefined = readIfThere): number {
  const cores = availableParallelism();
  const limit = cgroupLimit(read);
  return limit === undefined ? cores : Math.max(1, Math.min(cores, Math.ceil(limit)));
}

/** The cgroup's CPU limit in cores, or undefined when it sets none. */
export function cgroupLimit(read: (path: string) => string | undefined): number | undefined {
  const v2 = read('/sys/fs/cgroup/cpu.max');
  if (v2 !== undefined) {
    const [quota, period] = v2.trim().split(/\s+/);
    return quota === 'max' ? undefined : ratio(quota, period);
  }
  const quota = read('/sys/fs/cgroup/cpu/cpu.cfs_quota_us') ?? read('/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us');
  const period = read('/sys/fs/cgroup/cpu/cpu.cfs_period_us') ?? read('/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us');
  return quota === undefined || period === undefined ? undefined : ratio(quota.trim(), period.trim());
}

function ratio(quota: string | undefined, period: string | undefined): number | undefined {
  const q = Number(quota);
  const p = Number(period);
  return Number.isFinite(q) && Number.isFinite(p) && q > 0 && p > 0 ? q / p : undefined;
}

function readIfThere(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
