/**
 * List continue tokens, as kube's storage.EncodeContinue makes them: base64url (no padding) of
 * {"v":"meta.k8s.io/v1","rv":<list revision>,"start":"<key after the list prefix>\u0000"}. `rv` -1 means
 * "continue from the latest data" (what a 410 for a compacted token offers).
 */
import * as errors from './status.js';

export interface ContinueToken {
  revision: number;
  /** Where the next page starts, relative to the list's key prefix. */
  start: string;
}

export function encodeContinue(revision: number, nextStart: string): string {
  return Buffer.from(JSON.stringify({ v: 'meta.k8s.io/v1', rv: revision, start: nextStart })).toString('base64url');
}

export function decodeContinue(token: string): ContinueToken {
  const invalid = (why: string) => errors.badRequest(`invalid continue token: ${why}`);
  let parsed: { v?: unknown; start?: unknown; rv?: unknown } | null;
  try {
    parsed = JSON.parse(Buffer.from(token.replace(/=+$/, ''), 'base64url').toString('utf8'));
  } catch {
    throw invalid('not a valid continue token');
  }
  if (parsed?.v !== 'meta.k8s.io/v1') throw invalid('server does not recognize this encoded version');
  if (typeof parsed.start !== 'string' || parsed.start === '') throw invalid('continue key is not valid');
  if (parsed.start.startsWith('/') || parsed.start.split('/').includes('..'))
    throw invalid('continue key is not valid');
  if (typeof parsed.rv !== 'number' || !Number.isInteger(parsed.rv) || parsed.rv === 0 || parsed.rv < -1)
    throw invalid('incorrect encoded start resourceVersion (version meta.k8s.io/v1)');
  return { revision: parsed.rv, start: parsed.start };
}
