/**
 * How many seats a request occupies, and for how long after it is answered (kube's flowcontrol/request work
 * estimator):
 *
 * - a list, and a watch that asks for its initial events (sendInitialEvents=true), one seat for each 100 objects it
 *   goes through. This server answers them from its watch cache, which goes through every object of the resource
 *   (kube's "list from cache": the stored count; a list of one named object, one). A resource whose count is not
 *   known takes one seat (kube's choice for resources it does not store). At most its level's most, and 100.
 * - a write (create, update, patch, delete) one seat, and, when 10 or more open watches will see its event, one
 *   for every 10 of them (at most its level's most, and 10), held 5 ms per seat-equivalent longer after the answer
 *   (kube's finalSeats and additionalLatency: the work of sending the event to the watches);
 * - anything else one seat.
 *
 * A level's most is 15% of its nominal seats, at least 1 (kube's maxSeats of a level).
 */
import type { RequestInfo } from '../apimachinery/request.js';
import { selectedName } from './watches.js';

export const MIN_SEATS = 1;
export const MAX_LIST_SEATS = 100;
export const MAX_MUTATING_SEATS = 10;
const OBJECTS_PER_SEAT = 100;
const WATCHES_PER_SEAT = 10;
const EVENT_MS_PER_SEAT = 5;
const LEVEL_MAX_SEATS_FRACTION = 0.15;
const MUTATING_VERBS = new Set(['create', 'update', 'patch', 'delete']);

/** The objects the server holds of a group's resource (the watch cache's count); undefined when not known. */
export type ObjectCount = (group: string, resource: string) => number | undefined;

/** The open watches that will see the event of a write. */
export type InterestedWatches = (info: Pick<RequestInfo, 'apiGroup' | 'resource' | 'namespace' | 'name'>) => number;

export interface WorkEstimate {
  /** The seats held while it runs, and for additionalLatencyMs after (kube's max of initial and final seats). */
  seats: number;
  additionalLatencyMs: number;
}

/** The most seats one request takes in a level of `nominalSeats`. */
export function levelMaxSeats(nominalSeats: number): number {
  return Math.max(MIN_SEATS, Math.ceil(nominalSeats * LEVEL_MAX_SEATS_FRACTION));
}

export function estimateWork(
  info: Pick<RequestInfo, 'verb' | 'apiGroup' | 'resource' | 'namespace' | 'name' | 'isResourceRequest'>,
  query: URLSearchParams,
  sources: { objects: ObjectCount; watches: InterestedWatches },
  levelMax: number,
): WorkEstimate {
  const one = { seats: MIN_SEATS, additionalLatencyMs: 0 };
  if (!info.isResourceRequest) return one;
  if (info.verb === 'list' || (info.verb === 'watch' && query.get('sendInitialEvents') === 'true')) {
    // Requests for one object (by name, or a fieldSelector on metadata.name) touch one.
    if (selectedName(info, query)) return one;
    const stored = sources.objects(info.apiGroup, info.resource);
    if (stored === undefined) return one;
    const max = Math.min(levelMax, MAX_LIST_SEATS);
    return { seats: clamp(Math.ceil(stored / OBJECTS_PER_SEAT), max), additionalLatencyMs: 0 };
  }
  if (MUTATING_VERBS.has(info.verb)) {
    const watches = sources.watches(info);
    if (watches < WATCHES_PER_SEAT) return one;
    const finalSeats = Math.ceil(watches / WATCHES_PER_SEAT);
    const seats = clamp(finalSeats, Math.min(levelMax, MAX_MUTATING_SEATS));
    // The same work (seats × time) reshaped when the seats are capped: fewer seats, longer.
    return { seats, additionalLatencyMs: (finalSeats * EVENT_MS_PER_SEAT) / seats };
  }
  return one;
}

function clamp(seats: number, max: number): number {
  return Math.min(Math.max(seats, MIN_SEATS), Math.max(MIN_SEATS, max));
}
