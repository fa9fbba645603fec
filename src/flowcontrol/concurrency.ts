/**
 * How the server's seats (--max-requests-inflight plus --max-mutating-requests-inflight, as kube sums them) are
 * shared among the priority levels, as kube's apf_controller does:
 *
 * - nominal: each level's share of them, rounded up: ceil(server * shares / sum of all levels' shares);
 * - each level may lend lendablePercent of its nominal seats, and borrow up to borrowingLimitPercent of them (no
 *   limit when unset), so its limit lies between nominal - lendable and nominal + borrowing;
 * - every adjustment period (10 s), the seats are shared again by demand: a level's target is the larger of its
 *   smoothed demand (mean plus standard deviation of the seats wanted, decaying slowly) and the part of its nominal
 *   seats its demand reached; then one factor is found that, applied to every target and clamped to each level's
 *   bounds, sums to the nominal total (kube's computeConcurrencyAllocation), and the results are rounded.
 */
import type { SeatDemand } from './queueset.js';
import { DEFAULT_NOMINAL_CONCURRENCY_SHARES, type PriorityLevelConfiguration } from './types.js';

/** How fast the smoothed demand decays each period (kube's seatDemandSmoothed weight). */
const SMOOTHING = 0.977;

export interface LevelBounds {
  nominal: number;
  /** nominal - lendable. */
  lower: number;
  /** nominal + borrowing limit (the server's seats when there is no limit). */
  upper: number;
}

export function sharesOf(pl: PriorityLevelConfiguration): number {
  if (pl.spec.type === 'Exempt') return pl.spec.exempt?.nominalConcurrencyShares ?? 0;
  return pl.spec.limited?.nominalConcurrencyShares ?? DEFAULT_NOMINAL_CONCURRENCY_SHARES;
}

/** Each level's nominal seats and bounds, by name. */
export function levelBounds(serverSeats: number, levels: PriorityLevelConfiguration[]): Map<string, LevelBounds> {
  const totalShares = levels.reduce((sum, pl) => sum + sharesOf(pl), 0);
  const bounds = new Map<string, LevelBounds>();
  for (const pl of levels) {
    const nominal = totalShares > 0 ? Math.ceil((serverSeats * sharesOf(pl)) / totalShares) : 0;
    const lendablePercent =
      (pl.spec.type === 'Exempt' ? pl.spec.exempt?.lendablePercent : pl.spec.limited?.lendablePercent) ?? 0;
    const lendable = Math.round((nominal * lendablePercent) / 100);
    const borrowingPercent = pl.spec.type === 'Exempt' ? 0 : pl.spec.limited?.borrowingLimitPercent;
    const borrowing = borrowingPercent === undefined ? serverSeats : Math.round((nominal * borrowingPercent) / 100);
    bounds.set(pl.metadata.name!, { nominal, lower: nominal - lendable, upper: nominal + borrowing });
  }
  return bounds;
}

/** The demand a level carries from one period to the next. */
export interface DemandState {
  smoothed: number;
}

export interface AllocationInput {
  bounds: LevelBounds;
  demand: SeatDemand;
  state: DemandState;
  /** Exempt levels keep their nominal seats (nothing limits them) but still lend what they may. */
  exempt: boolean;
}

/** The current limits for the next period, in the order given; updates each state's smoothed demand. */
export function allocate(levels: AllocationInput[]): number[] {
  const required = levels.reduce((sum, l) => sum + l.bounds.nominal, 0);
  const problem = levels.map(({ bounds, demand, state, exempt }) => {
    const envelope = demand.average + demand.stddev;
    state.smoothed = Math.max(envelope, SMOOTHING * state.smoothed);
    if (exempt) return { lower: bounds.lower, upper: bounds.lower, target: bounds.lower };
    const lower = Math.max(bounds.lower, Math.min(bounds.nominal, demand.highWatermark));
    return { lower, upper: Math.max(lower, bounds.upper), target: Math.max(lower, state.smoothed) };
  });
  return fairAllocation(required, problem).map((x) => Math.round(x));
}

/**
 * Amounts within [lower, upper] proportional to the targets (one factor for all, clamped) that sum to `required`,
 * as near as the bounds allow.
 */
export function fairAllocation(required: number, items: { lower: number; upper: number; target: number }[]): number[] {
  const at = (factor: number) => items.map((i) => Math.min(i.upper, Math.max(i.lower, factor * i.target)));
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  if (sum(at(0)) >= required) return at(0);
  let high = 1;
  while (sum(at(high)) < required && high < 1e12) high *= 2;
  if (sum(at(high)) < required) return at(high);
  let low = 0;
  for (let i = 0; i < 100; i++) {
    const mid = (low + high) / 2;
    if (sum(at(mid)) < required) low = mid;
    else high = mid;
  }
  return at(high);
}
