/**
 * Limits on the shape of decoded documents, so a small body cannot exhaust the stack or memory of what handles
 * it later (cloning, validation, merging, managed fields all walk objects recursively).
 *
 * - Depth: Go's JSON decoder refuses documents nested more than 10000 levels. JavaScript's recursive walks
 *   (and V8's structuredClone) run out of stack well before that, so the limit here is lower; no object of
 *   this API comes near it.
 * - Aliases: a YAML document can name a node once and repeat it by alias, so a few hundred bytes can stand for
 *   billions of nodes ("billion laughs"). js-yaml shares aliased nodes, which stays small until something
 *   walks them. The rule is go-yaml's (decode.go allowedAliasRatio), as kube-apiserver decodes YAML with it:
 *   refused once more than 100 nodes came through aliases, more than 1000 nodes were decoded in all, and the
 *   aliased share is above what that size allows (99% up to 400,000 nodes, falling to 10% at 4,000,000).
 */

/** Deepest nesting of objects and arrays accepted in a request body, a patch or an applied configuration. */
export const MAX_NESTING_DEPTH = 1000;

export class NestingError extends Error {}

const RATIO_RANGE_LOW = 400_000;
const RATIO_RANGE_HIGH = 4_000_000;

function allowedAliasRatio(decoded: number): number {
  if (decoded <= RATIO_RANGE_LOW) return 0.99;
  if (decoded >= RATIO_RANGE_HIGH) return 0.1;
  return 0.99 - 0.89 * ((decoded - RATIO_RANGE_LOW) / (RATIO_RANGE_HIGH - RATIO_RANGE_LOW));
}

/**
 * Throws NestingError when `value` is nested deeper than MAX_NESTING_DEPTH, or when (as parsed YAML, whose
 * aliases are shared objects) it expands through aliases beyond go-yaml's ratio. Iterative: any depth is safe.
 */
export function checkNesting(value: unknown): void {
  const seen = new Set<object>();
  // Each entry: a value, its depth, and whether it is reached through an alias (a node seen before).
  const stack: [unknown, number, boolean][] = [[value, 0, false]];
  let decoded = 0;
  let aliased = 0;
  while (stack.length) {
    const [v, depth, viaAlias] = stack.pop()!;
    decoded++;
    if (viaAlias) aliased++;
    if (aliased > 100 && decoded > 1000 && aliased / decoded > allowedAliasRatio(decoded)) {
      throw new NestingError('document contains excessive aliasing');
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_NESTING_DEPTH)
      throw new NestingError(`exceeded max depth: nested more than ${MAX_NESTING_DEPTH} levels`);
    const alias = viaAlias || seen.has(v);
    seen.add(v);
    const children = Array.isArray(v) ? v : Object.values(v);
    for (const child of children) stack.push([child, depth + 1, alias]);
  }
}
