/** Media types in and out (after kube's endpoints/handlers/negotiation). */
import * as errors from '../apimachinery/status.js';

export type Encoding = 'json' | 'yaml';

export const JSON_TYPE = 'application/json';
export const YAML_TYPE = 'application/yaml';
export const JSON_PATCH_TYPE = 'application/json-patch+json';
export const MERGE_PATCH_TYPE = 'application/merge-patch+json';

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
        if (eq > 0) params[p.slice(0, eq).trim().toLowerCase()] = p.slice(eq + 1).trim().replace(/^"|"$/g, '');
      }
      const q = params.q === undefined ? 1 : Number(params.q);
      return { type: type.toLowerCase(), params, q: Number.isFinite(q) ? q : 0 };
    })
    .filter((m) => m.type && m.q > 0)
    .sort((a, b) => b.q - a.q);
}

/**
 * The response encoding for an Accept header: the first acceptable entry wins. Entries asking for another
 * shape of the object (`as=Table`, ...) or a format we do not serve (protobuf) are skipped, not fatal.
 */
export function negotiateResponse(accept: string | undefined): Encoding {
  if (!accept) return 'json';
  for (const range of parseMediaRanges(accept)) {
    if (range.params.as) continue;
    if (range.type === JSON_TYPE || range.type === 'application/*' || range.type === '*/*') return 'json';
    if (range.type === YAML_TYPE) return 'yaml';
  }
  throw errors.notAcceptable(SERVED);
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
