/** Media types in and out (after kube's endpoints/handlers/negotiation). */
import { JSON_TYPE, YAML_TYPE } from '../apimachinery/mediatypes.js';
import * as errors from '../apimachinery/status.js';

export {
  APPLY_PATCH_TYPE,
  JSON_PATCH_TYPE,
  JSON_TYPE,
  MERGE_PATCH_TYPE,
  YAML_TYPE,
} from '../apimachinery/mediatypes.js';

export type Encoding = 'json' | 'yaml';

const SERVED = [JSON_TYPE, YAML_TYPE];

interface MediaRange {
  type: string;
  params: Record<string, string>;
  q: number;
}

export function parseMediaRanges(header: string): MediaRange[] {
  return header
    .split(',')
    .map((entry) => {
      const [type, ...rawParams] = entry.split(';').map((s) => s.trim());
      const params: Record<string, string> = {};
      for (const p of rawParams) {
        const eq = p.indexOf('=');
        if (eq > 0)
          params[p.slice(0, eq).trim().toLowerCase()] = p
            .slice(eq + 1)
            .trim()
            .replace(/^"|"$/g, '');
      }
      const q = params.q === undefined ? 1 : Number(params.q);
      return { type: type.toLowerCase(), params, q: Number.isFinite(q) ? q : 0 };
    })
    .filter((m) => m.type && m.q > 0)
    .sort((a, b) => b.q - a.q);
}

/** Another shape of the answer that a client may ask for with `;as=...;g=meta.k8s.io;v=...`. */
export type Shape = 'Table' | 'PartialObjectMetadata' | 'PartialObjectMetadataList';

export interface Target {
  encoding: Encoding;
  /** Absent: the objects themselves. */
  as?: Shape;
  /** meta.k8s.io version of the shape. */
  version?: 'v1' | 'v1beta1';
}

/** What is being answered: one object, a list, or a watch stream. */
export type Answer = 'object' | 'list' | 'watch';

/** The shapes each kind of answer can take (kube: the list form only for lists; watches send single forms). */
const SHAPES: Record<Answer, Shape[]> = {
  object: ['Table', 'PartialObjectMetadata'],
  list: ['Table', 'PartialObjectMetadataList'],
  watch: ['Table', 'PartialObjectMetadata'],
};

function encodingOf(type: string, answer: Answer): Encoding | undefined {
  if (type === JSON_TYPE || type === 'application/*' || type === '*/*') return 'json';
  // YAML has no streaming form, so a watch cannot be YAML.
  if (type === YAML_TYPE && answer !== 'watch') return 'yaml';
  return undefined;
}

/**
 * The answer's encoding and shape for an Accept header: the first acceptable entry wins. Entries asking for a
 * format (protobuf) or shape (aggregated discovery, ...) we do not serve are skipped, not fatal.
 */
export function negotiate(accept: string | undefined, answer: Answer = 'object'): Target {
  if (!accept) return { encoding: 'json' };
  for (const range of parseMediaRanges(accept)) {
    const encoding = encodingOf(range.type, answer);
    if (!encoding) continue;
    const as = range.params.as;
    if (!as) return { encoding };
    const version = range.params.v;
    if (range.params.g !== 'meta.k8s.io' || (version !== 'v1' && version !== 'v1beta1')) continue;
    if (SHAPES[answer].includes(as as Shape)) return { encoding, as: as as Shape, version };
  }
  throw errors.notAcceptable(SERVED);
}

/** The encoding of an answer that has no other shapes (discovery, Status): entries asking for one are skipped. */
export function negotiateResponse(accept: string | undefined): Encoding {
  if (!accept) return 'json';
  for (const range of parseMediaRanges(accept)) {
    const encoding = encodingOf(range.type, 'object');
    if (encoding && !range.params.as) return encoding;
  }
  throw errors.notAcceptable(SERVED);
}

/** The group of the aggregated discovery document (APIGroupDiscoveryList) and the versions served of it. */
export const DISCOVERY_GROUP = 'apidiscovery.k8s.io';
const DISCOVERY_VERSIONS = ['v2', 'v2beta1'] as const;

export interface AggregatedDiscoveryTarget {
  encoding: Encoding;
  version: (typeof DISCOVERY_VERSIONS)[number];
}

/**
 * Whether an Accept header of /api or /apis asks for the aggregated document, and in which version and encoding:
 * the first entry naming `as=APIGroupDiscoveryList;g=apidiscovery.k8s.io` in a served version, wherever it stands
 * in the header (kube's WrapAggregatedDiscoveryToHandler looks only at such entries); undefined: the legacy one.
 */
export function negotiateAggregatedDiscovery(accept: string | undefined): AggregatedDiscoveryTarget | undefined {
  if (!accept) return undefined;
  for (const range of parseMediaRanges(accept)) {
    const { as, g, v } = range.params;
    if (as !== 'APIGroupDiscoveryList' || g !== DISCOVERY_GROUP) continue;
    const version = DISCOVERY_VERSIONS.find((served) => served === v);
    const encoding = encodingOf(range.type, 'object');
    if (version && encoding) return { encoding, version };
  }
  return undefined;
}

/** The media type of a request body, without parameters; an absent Content-Type means JSON. */
export function contentType(header: string | undefined): string {
  if (!header) return JSON_TYPE;
  return header.split(';')[0].trim().toLowerCase();
}

/** The encoding of an object in a request body; 415 for anything else. */
export function requestEncoding(header: string | undefined): Encoding {
  const type = contentType(header);
  if (type === JSON_TYPE) return 'json';
  if (type === YAML_TYPE) return 'yaml';
  throw errors.unsupportedMediaType(SERVED);
}
