/**
 * The JSONPath that CRD printer columns allow (client-go util/jsonpath, restricted as apiextensions validates
 * additionalPrinterColumns: simple paths only), and the text its printer writes for one result. Table cells use
 * both; the evaluator knows nothing about tables.
 */
import { goJSON } from './golang/json.js';
import { formatNumber } from './golang/fmt.js';
import { goString } from './golang/strings.js';

type Step = { kind: 'field'; name: string } | { kind: 'index'; index: number };

/** A compiled JSONPath: `.a.b`, `.a[0].b`, `.a[-1]`, `.a['x.y']`, `.a["x"]`; found=false when any step is missing. */
export type JSONPathEvaluator = (obj: unknown) => { found: boolean; value?: unknown };

export function compileJSONPath(path: string): JSONPathEvaluator {
  const text = path.startsWith('{') && path.endsWith('}') ? path.slice(1, -1) : path;
  const steps: Step[] = [];
  let i = 0;
  const fail = (): never => {
    throw new Error(`unrecognized column definition ${JSON.stringify(path)}`);
  };
  while (i < text.length) {
    const c = text[i];
    if (c === '.') {
      let j = i + 1;
      while (j < text.length && text[j] !== '.' && text[j] !== '[') j++;
      const name = text.slice(i + 1, j);
      if (!name) {
        // a leading "." alone (the root) is allowed only as the whole path
        if (text.length === 1) break;
        fail();
      }
      steps.push({ kind: 'field', name });
      i = j;
    } else if (c === '[') {
      const close = text.indexOf(']', i);
      if (close < 0) fail();
      const inner = text.slice(i + 1, close).trim();
      const quoted = /^'(.*)'$|^"(.*)"$/.exec(inner);
      if (quoted) steps.push({ kind: 'field', name: quoted[1] ?? quoted[2] });
      else if (/^-?\d+$/.test(inner)) steps.push({ kind: 'index', index: Number(inner) });
      else fail();
      i = close + 1;
    } else {
      fail();
    }
  }
  return (obj: unknown) => {
    let cur: unknown = obj;
    for (const step of steps) {
      if (step.kind === 'field') {
        if (cur === null || typeof cur !== 'object' || Array.isArray(cur)) return { found: false };
        if (!Object.prototype.hasOwnProperty.call(cur, step.name)) return { found: false };
        cur = (cur as Record<string, unknown>)[step.name];
      } else {
        if (!Array.isArray(cur)) return { found: false };
        const index = step.index < 0 ? step.index + cur.length : step.index;
        if (index < 0 || index >= cur.length) return { found: false };
        cur = cur[index];
      }
    }
    return { found: true, value: cur };
  };
}

/**
 * The text jsonpath's PrintResults writes for one value: maps and slices as encoding/json, anything else with
 * fmt's `%v` (numbers as kube decodes them: int64 when whole, else float64).
 */
export function jsonPathText(value: unknown): string {
  // An explicit null: jsonpath prints the invalid reflect.Value of a nil interface as "<no value>".
  if (value === null || value === undefined) return '<no value>';
  switch (typeof value) {
    case 'string':
      return goString(value);
    case 'boolean':
      return String(value);
    case 'number':
      return formatNumber(value);
    default:
      return goJSON(value);
  }
}
