/**
 * How many seats a request occupies while it runs (kube's flowcontrol/request work estimator): one, except for a
 * list, and a watch that asks for its initial events (sendInitialEvents=true), which take one seat for each 100
 * objects they go through. This server answers them from its watch cache, which goes through every object of the
 * resource (kube's "list from cache": the stored count; a list of one named object, one). A resource whose count is
 * not known takes the fewest seats (kube's choice for resources it does not store). The most a request takes is
 * its level's: 15% of the level's nominal seats, at least 1 and at most kube's MaximumListSeatsLimit of 100.
 */
import type { RequestInfo } from '../apimachinery/request.js';

export const MIN_SEATS = 1;
export const MAX_LIST_SEATS = 100;
const OBJECTS_PER_SEAT = 100;
const LEVEL_MAX_SEATS_FRACTION = 0.15;

/** The objects the server holds of a group's resource (the watch cache's count); undefined when not known. */
export type ObjectCount = (group: string, resource: string) => number | undefined;

/** The most seats one request may take in a level of `nominalSeats`. */
export function levelMaxSeats(nominalSeats: number): number {
  return Math.min(MAX_LIST_SEATS, Math.max(MIN_SEATS, Math.ceil(nominalSeats * LEVEL_MAX_SEATS_FRACTION)));
}

export function estimateSeats(
  info: Pick<RequestInfo, 'verb' | 'apiGroup' | 'resource' | 'name' | 'isResourceRequest'>,
  query: URLSearchParams,
  count: ObjectCount,
  maxSeats: number,
): number {
  if (!info.isResourceRequest) return MIN_SEATS;
  const listsObjects = info.verb === 'list' || (info.verb === 'watch' && query.get('sendInitialEvents') === 'true');
  if (!listsObjects) return MIN_SEATS;
  // Requests with a name (a watch of one object, a list by metadata.name) touch one object.
  if (info.name || /(^|,)\s*metadata\.name\s*==?[^,]/.test(query.get('fieldSelector') ?? '')) return MIN_SEATS;
  const stored = count(info.apiGroup, info.resource);
  if (stored === undefined) return MIN_SEATS;
  const seats = Math.ceil(stored / OBJECTS_PER_SEAT);
  return Math.min(Math.max(seats, MIN_SEATS), Math.max(MIN_SEATS, Math.min(maxSeats, MAX_LIST_SEATS)));
}
