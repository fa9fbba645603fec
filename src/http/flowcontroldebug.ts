/**
 * kube's API Priority and Fairness debug endpoints, as text tables in kube's columns:
 * /debug/api_priority_and_fairness/dump_priority_levels (one line per level: its queues in use, waiting and
 * executing requests, and what it dispatched and refused) and .../dump_queues (one line per queue). They are
 * authorized as any other path (system:masters, or whom the host's RBAC allows the nonResourceURL).
 */
import type { FlowControl } from '../flowcontrol/controller.js';

export const DEBUG_PREFIX = '/debug/api_priority_and_fairness/';

/** The dump at `path`, or undefined when the path is not one of them. */
export function flowControlDump(flowControl: FlowControl, path: string): string | undefined {
  const levels = [...flowControl.levels()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  if (path === `${DEBUG_PREFIX}dump_priority_levels`) {
    const rows = levels.map((l) => {
      const qs = l.queueSet;
      const active = qs.queueStates().filter((q) => q.waiting.length || q.executing).length;
      const { rejected } = qs.totals;
      return [
        l.name,
        active,
        qs.waiting === 0 && qs.executing === 0,
        false,
        qs.waiting,
        qs.executing,
        qs.totals.dispatched,
        rejected['queue-full'] + rejected['concurrency-limit'],
        rejected['time-out'],
        rejected.cancelled,
      ].map(String);
    });
    return table(
      [
        'PriorityLevelName',
        'ActiveQueues',
        'IsIdle',
        'IsQuiescing',
        'WaitingRequests',
        'ExecutingRequests',
        'DispatchedRequests',
        'RejectedRequests',
        'TimedoutRequests',
        'CancelledRequests',
      ],
      rows,
    );
  }
  if (path === `${DEBUG_PREFIX}dump_queues`) {
    const rows: string[][] = [];
    for (const l of levels) {
      const queues = l.queueSet.queueStates();
      if (!queues.length) rows.push([l.name, ...Array<string>(6).fill('<none>')]);
      for (const q of queues) {
        const seats = q.waiting.reduce((sum, t) => sum + t.request.seats, 0);
        rows.push([
          l.name,
          String(q.index),
          String(q.waiting.length),
          String(q.executing),
          String(q.seatsInUse),
          `${q.nextDispatchR.toFixed(8)}ss`,
          String(seats),
        ]);
      }
    }
    return table(
      [
        'PriorityLevelName',
        'Index',
        'PendingRequests',
        'ExecutingRequests',
        'SeatsInUse',
        'NextDispatchR',
        'InitialSeatsSum',
      ],
      rows,
    );
  }
  return undefined;
}

/** Comma-separated columns padded to line up, as kube's tabwriter prints them. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)) + 1);
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : `${c},`.padEnd(widths[i] + 1)))
      .join(' ')
      .trimEnd();
  return [header, ...rows].map(line).join('\n') + '\n';
}
