/**
 * Go's strconv.Quote (fmt's %q, and %#v of a string) and the pieces it needs: which code points Go prints as they
 * are (unicode.IsPrint), and a string's code points as Go's `range` yields them. Kube quotes user input this way
 * in its messages ("Invalid value: \"x\""), which clients match byte for byte.
 */

const printable = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** unicode.IsPrint / strconv.IsPrint for one code point. */
export function isGoPrint(codePoint: number): boolean {
  return printable.test(String.fromCodePoint(codePoint));
}

/** The code points of a string as Go's `range` yields them: lone surrogates become U+FFFD (3 bytes). */
export function* goRunes(value: string): Generator<{ rune: number; byteIndex: number }> {
  let byteIndex = 0;
  for (const ch of value) {
    let rune = ch.codePointAt(0)!;
    if (rune >= 0xd800 && rune <= 0xdfff) rune = 0xfffd;
    yield { rune, byteIndex };
    byteIndex += rune < 0x80 ? 1 : rune < 0x800 ? 2 : rune < 0x10000 ? 3 : 4;
  }
}

/** strconv.Quote / fmt's %q (and %#v of a string): Go escapes, not JSON's. */
export function goQuote(value: string): string {
  let out = '"';
  for (const { rune } of goRunes(value)) {
    const ch = String.fromCodePoint(rune);
    switch (ch) {
      case '"':
        out += '\\"';
        continue;
      case '\\':
        out += '\\\\';
        continue;
      case '\x07':
        out += '\\a';
        continue;
      case '\b':
        out += '\\b';
        continue;
      case '\f':
        out += '\\f';
        continue;
      case '\n':
        out += '\\n';
        continue;
      case '\r':
        out += '\\r';
        continue;
      case '\t':
        out += '\\t';
        continue;
      case '\v':
        out += '\\v';
        continue;
    }
    if (isGoPrint(rune)) {
      out += ch;
    } else if (rune < 0x20 || rune === 0x7f) {
      out += `\\x${rune.toString(16).padStart(2, '0')}`;
    } else if (rune < 0x10000) {
      out += `\\u${rune.toString(16).padStart(4, '0')}`;
    } else {
      out += `\\U${rune.toString(16).padStart(8, '0')}`;
    }
  }
  return `${out}"`;
}

/** fmt's %#v of a []string: `[]string{"a", "b"}`. */
export function goStringSlice(values: readonly string[]): string {
  return `[]string{${values.map(goQuote).join(', ')}}`;
}
