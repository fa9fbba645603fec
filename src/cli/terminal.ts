/** What reaches a terminal from this client: shown, never acted on (context.ts terminalSafe, errors.ts serverText). */

/**
 * The characters a terminal acts on (C0 but tab and newline, DEL, C1: cursor moves, a window title, an answer typed
 * back as if by the user) and those that reorder or break what is shown (bidi overrides, line separators), written
 * as \xNN or \uNNNN instead. What a server or another tenant chose (a message, a key, a value) reaches a terminal
 * only this way.
 */
/* eslint-disable no-control-regex -- finding control characters is the point */
const TERMINAL_CONTROLS =
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
// As above, newlines and tabs too.
const TERMINAL_CONTROLS_AND_LINES = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;
/* eslint-enable no-control-regex */

/** In JSON text (where C0 controls are escaped already) the rest of them, as \u escapes: still JSON. */
const JSON_UNSAFE = /[\u007f-\u009f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

const unicodeEscaped = (c: string): string => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
const escaped = (c: string): string => {
  const code = c.charCodeAt(0);
  return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : unicodeEscaped(c);
};

/** JSON text with nothing left for printable to change. */
export function jsonPrintable(json: string): string {
  return json.replace(JSON_UNSAFE, unicodeEscaped);
}

export function printable(text: string): string {
  return text.replace(TERMINAL_CONTROLS, escaped);
}

/** `text` a server chose, as one line: a newline in it cannot make a line that seems to be another message or row. */
export function oneLine(text: string): string {
  return text.replace(TERMINAL_CONTROLS_AND_LINES, escaped);
}
