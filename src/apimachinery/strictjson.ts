/**
 * Duplicate object keys in a JSON document, reported the way kube's strict decoding does
 * (sigs.k8s.io/json UnmarshalStrict with DisallowDuplicateFields, as used by the apiserver's JSON serializer
 * for fieldValidation=Strict/Warn): each path once, in document order, at most 100, formatted like the
 * decoder's strict field stack: object keys joined with '.', array elements as `[i]` — `spec.displayName`,
 * `metadata.labels.a`, `spec.access[0].verbs`, `[0].a` for a top-level array. Keys are used as decoded
 * (escapes resolved) and are not escaped in the path, as in Go.
 *
 * JSON.parse silently keeps the last of duplicated keys, so this scans the text itself: one linear pass with
 * an explicit stack (no recursion), no dependencies. Text that is not valid JSON yields [] (Go reports the
 * syntax error instead of strict errors; the caller parses the body separately).
 */
import { goQuote } from './golang/strconv.js';

/** sigs.k8s.io/json stops collecting strict errors after this many. */
const MAX_ERRORS = 100;

class Invalid extends Error {}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Go's scanner refuses documents nested deeper than this (encoding/json maxNestingDepth). */
const MAX_DEPTH = 10000;

type Frame = { kind: 'object'; path: string; keys: Set<string> } | { kind: 'array'; path: string; index: number };

class Scanner {
  private pos = 0;
  readonly found: string[] = [];
  private readonly seen = new Set<string>();

  constructor(private readonly text: string) {}

  /** An explicit stack instead of recursion, so deep documents cannot overflow the JS stack. */
  run(): void {
    const t = this.text;
    const stack: Frame[] = [];
    let path = '';
    let mode: 'value' | 'key' | 'after' = 'value';
    for (;;) {
      if (mode === 'value') {
        this.skipSpace();
        const c = t.charCodeAt(this.pos);
        if (c === 0x7b || c === 0x5b) {
          // { or [
          this.pos++;
          this.skipSpace();
          if (stack.length >= MAX_DEPTH) throw new Invalid();
          if (t.charCodeAt(this.pos) === (c === 0x7b ? 0x7d : 0x5d)) {
            this.pos++;
            mode = 'after';
          } else if (c === 0x7b) {
            stack.push({ kind: 'object', path, keys: new Set() });
            mode = 'key';
          } else {
            stack.push({ kind: 'array', path, index: 0 });
            path = `${path}[0]`;
          }
          continue;
        }
        this.scalar(c);
        mode = 'after';
        continue;
      }
      if (mode === 'key') {
        const frame = stack[stack.length - 1] as Extract<Frame, { kind: 'object' }>;
        if (t.charCodeAt(this.pos) !== 0x22) throw new Invalid();
        const key = this.string();
        const child = frame.path ? `${frame.path}.${key}` : key;
        // The decoder checks before it reads the value, so a duplicate is reported before anything inside it.
        if (frame.keys.has(key)) this.report(child);
        else frame.keys.add(key);
        this.skipSpace();
        if (t.charCodeAt(this.pos) !== 0x3a) throw new Invalid(); // :
        this.pos++;
        path = child;
        mode = 'value';
        continue;
      }
      // after a value
      this.skipSpace();
      const frame = stack[stack.length - 1];
      if (!frame) {
        if (this.pos !== t.length) throw new Invalid();
        return;
      }
      const c = t.charCodeAt(this.pos);
      this.pos++;
      if (frame.kind === 'object') {
        if (c === 0x7d) {
          stack.pop(); // }
        } else if (c === 0x2c) {
          this.skipSpace(); // ,
          mode = 'key';
        } else {
          throw new Invalid();
        }
      } else if (c === 0x5d) {
        stack.pop(); // ]
      } else if (c === 0x2c) {
        frame.index++; // ,
        path = `${frame.path}[${frame.index}]`;
        mode = 'value';
      } else {
        throw new Invalid();
      }
    }
  }

  private report(path: string): void {
    if (this.found.length >= MAX_ERRORS || this.seen.has(path)) return;
    this.seen.add(path);
    this.found.push(path);
  }

  private skipSpace(): void {
    while (this.pos < this.text.length && isSpace(this.text.charCodeAt(this.pos))) this.pos++;
  }

  private scalar(c: number): void {
    switch (c) {
      case 0x22: // "
        this.string();
        return;
      case 0x74: // t
        this.literal('true');
        return;
      case 0x66: // f
        this.literal('false');
        return;
      case 0x6e: // n
        this.literal('null');
        return;
      default:
        this.number();
    }
  }

  /** Reads a string literal at pos and returns its decoded value. */
  private string(): string {
    const start = this.pos;
    this.pos++; // opening quote
    let escaped = false;
    for (;;) {
      if (this.pos >= this.text.length) throw new Invalid();
      const c = this.text.charCodeAt(this.pos);
      if (c === 0x22) break;
      if (c < 0x20) throw new Invalid();
      if (c === 0x5c) {
        escaped = true;
        const e = this.text.charCodeAt(this.pos + 1);
        if (e === 0x75) {
          // \uXXXX
          if (!/^[0-9a-fA-F]{4}$/.test(this.text.slice(this.pos + 2, this.pos + 6))) throw new Invalid();
          this.pos += 6;
          continue;
        }
        // " \ / b f n r t
        if (![0x22, 0x5c, 0x2f, 0x62, 0x66, 0x6e, 0x72, 0x74].includes(e)) throw new Invalid();
        this.pos += 2;
        continue;
      }
      this.pos++;
    }
    this.pos++; // closing quote
    if (!escaped) return this.text.slice(start + 1, this.pos - 1);
    // Go's decoder turns escaped lone surrogates into U+FFFD.
    return (JSON.parse(this.text.slice(start, this.pos)) as string).replace(LONE_SURROGATE, '\ufffd');
  }

  private literal(word: string): void {
    if (!this.text.startsWith(word, this.pos)) throw new Invalid();
    this.pos += word.length;
  }

  /** -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
  private number(): void {
    const t = this.text;
    if (t.charCodeAt(this.pos) === 0x2d) this.pos++;
    if (t.charCodeAt(this.pos) === 0x30) {
      this.pos++;
    } else if (isDigit(t.charCodeAt(this.pos))) {
      while (isDigit(t.charCodeAt(this.pos))) this.pos++;
    } else {
      throw new Invalid();
    }
    if (t.charCodeAt(this.pos) === 0x2e) {
      this.pos++;
      if (!isDigit(t.charCodeAt(this.pos))) throw new Invalid();
      while (isDigit(t.charCodeAt(this.pos))) this.pos++;
    }
    const e = t.charCodeAt(this.pos);
    if (e === 0x65 || e === 0x45) {
      this.pos++;
      const s = t.charCodeAt(this.pos);
      if (s === 0x2b || s === 0x2d) this.pos++;
      if (!isDigit(t.charCodeAt(this.pos))) throw new Invalid();
      while (isDigit(t.charCodeAt(this.pos))) this.pos++;
    }
  }
}

/**
 * The paths of duplicated object keys in `jsonText`, in the order the decoder meets them (each path once,
 * at most 100). [] when there are none, or when the text is not valid JSON. Never throws.
 */
export function duplicateFields(jsonText: string): string[] {
  const scanner = new Scanner(jsonText);
  try {
    scanner.run();
  } catch (err) {
    if (err instanceof Invalid) return [];
    throw err;
  }
  return scanner.found;
}

/** The strict decoding error texts for `paths`: `duplicate field "spec.displayName"` (Go's %q quoting). */
export function duplicateFieldMessages(paths: readonly string[]): string[] {
  return paths.map((p) => `duplicate field ${goQuote(p)}`);
}
