/** ListOptions from the query of a list or watch, validated as kube's internalversion validation does. */
import { fieldError, type FieldError } from '../apimachinery/field.js';
import { objectOfGrants } from '../access/model.js';
import { deepFreeze } from '../apimachinery/encoded.js';
import { objectFields, parseSupportedFieldSelector } from '../apimachinery/fields.js';
import { parseLabelSelector } from '../apimachinery/labels.js';
import { queryBool } from '../apimachinery/queryparams.js';
import { selectionAttributes, type SelectionAttributes } from '../apimachinery/selection.js';
import * as errors from '../apimachinery/status.js';
import type { KubeObject } from '../apimachinery/types.js';
import type { CachedAttributes } from '../storage/interface.js';
import type { ListOptions, Predicate, WatchOptions } from '../storage/reader.js';

export interface WatchQuery extends WatchOptions {
  timeoutSeconds?: number;
  allowWatchBookmarks: boolean;
}

const MATCHES = ['Exact', 'NotOlderThan'];

function integer(query: URLSearchParams, name: string): number | undefined {
  const raw = query.get(name);
  if (raw === null || raw === '') return undefined;
  if (!/^-?[0-9]+$/.test(raw))
    throw errors.badRequest(`invalid value for ${name}: ${JSON.stringify(raw)}: must be an integer`);
  return Number(raw);
}

/**
 * Label and field selectors as one predicate; `name` (a watch of one object) pins metadata.name, and
 * `visible` (what authorization lets this caller see) narrows it further.
 */
export function predicate(query: URLSearchParams, name?: string, visible?: (obj: KubeObject) => boolean): Predicate {
  const labels = parseLabelSelector(query.get('labelSelector'));
  const fieldText = [query.get('fieldSelector'), name ? `metadata.name=${name}` : ''].filter(Boolean).join(',');
  const fields = parseSupportedFieldSelector(fieldText);
  const selects = (a: SelectionAttributes) =>
    labels.matches(a.labels) && (fields.empty() || fields.matches(objectFields({ metadata: a })));
  const visibleByGrants = visible && byGrants(visible);
  return {
    empty: labels.empty() && fields.empty() && !visible,
    // Equal selector texts select alike; what a caller may see is theirs alone.
    key: visible ? undefined : JSON.stringify([query.get('labelSelector') ?? '', fieldText]),
    matchesAttributes: (a) => selects(a) && (!visibleByGrants || visibleByGrants(a)),
    matches: (obj: KubeObject) => selects(selectionAttributes(obj)) && (!visible || visible(obj)),
  };
}

/** Grant texts a predicate keeps decoded; past this it forgets them all (a long watch sees many). */
const GRANTS_REMEMBERED = 1024;

/**
 * `visible` asked of what the watch cache keeps of an object (its name, namespace, labels and grants), which is all
 * it reads: no object is decoded, and objects granted alike (a team's) share one decoding of their grants.
 */
function byGrants(visible: (obj: KubeObject) => boolean): (a: CachedAttributes) => boolean {
  const decodedGrants = new Map<string, KubeObject['spec']>();
  return (a) => {
    let spec = decodedGrants.get(a.grants);
    if (spec === undefined) {
      if (decodedGrants.size >= GRANTS_REMEMBERED) decodedGrants.clear();
      spec = deepFreeze(objectOfGrants(a.grants).spec);
      decodedGrants.set(a.grants, spec);
    }
    return visible({ metadata: { name: a.name, namespace: a.namespace, labels: a.labels }, spec } as KubeObject);
  };
}

function invalid(errs: FieldError[]): errors.StatusError {
  return errors.invalid({ group: 'meta.k8s.io', kind: 'ListOptions' }, '', errs);
}

export function parseListQuery(query: URLSearchParams, visible?: (obj: KubeObject) => boolean): ListOptions {
  const resourceVersion = query.get('resourceVersion') ?? '';
  const match = query.get('resourceVersionMatch') ?? '';
  const cont = query.get('continue') ?? '';
  const errs: FieldError[] = [];
  if (match) {
    if (!resourceVersion)
      errs.push(
        fieldError.forbidden(
          'resourceVersionMatch',
          'resourceVersionMatch is forbidden unless resourceVersion is provided',
        ),
      );
    if (cont)
      errs.push(
        fieldError.forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'),
      );
    if (!MATCHES.includes(match)) errs.push(fieldError.notSupported('resourceVersionMatch', match, [...MATCHES, '']));
    if (match === 'Exact' && resourceVersion === '0')
      errs.push(
        fieldError.forbidden(
          'resourceVersionMatch',
          'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
      );
  }
  if (query.has('sendInitialEvents'))
    errs.push(fieldError.forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  if (errs.length) throw invalid(errs);
  if (cont && resourceVersion)
    throw errors.badRequest('specifying resource version is not allowed when using continue');
  const limit = integer(query, 'limit');
  return {
    predicate: predicate(query, undefined, visible),
    limit: limit && limit > 0 ? limit : undefined,
    continue: cont || undefined,
    resourceVersion: resourceVersion || undefined,
    resourceVersionMatch: (match || undefined) as ListOptions['resourceVersionMatch'],
  };
}

export function parseWatchQuery(
  query: URLSearchParams,
  name?: string,
  visible?: (obj: KubeObject) => boolean,
): WatchQuery {
  const match = query.get('resourceVersionMatch') ?? '';
  const sendInitialEvents = queryBool(query, 'sendInitialEvents');
  const errs: FieldError[] = [];
  if (sendInitialEvents !== undefined && match !== 'NotOlderThan') {
    errs.push(
      fieldError.forbidden(
        'resourceVersionMatch',
        'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
      ),
    );
  }
  if (match) {
    if (sendInitialEvents === undefined)
      errs.push(
        fieldError.forbidden(
          'resourceVersionMatch',
          'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
        ),
      );
    if (match !== 'NotOlderThan') errs.push(fieldError.notSupported('resourceVersionMatch', match, ['NotOlderThan']));
  }
  if (errs.length) throw invalid(errs);
  const timeoutSeconds = integer(query, 'timeoutSeconds');
  return {
    predicate: predicate(query, name, visible),
    resourceVersion: query.get('resourceVersion') || undefined,
    sendInitialEvents,
    allowWatchBookmarks: queryBool(query, 'allowWatchBookmarks') ?? false,
    timeoutSeconds: timeoutSeconds && timeoutSeconds > 0 ? timeoutSeconds : undefined,
  };
}
