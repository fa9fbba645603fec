/**
 * Go's string order. Go compares strings byte by byte in UTF-8 (strings.Compare, sort.Strings, `<`), which is
 * code point order; JavaScript's `<` compares UTF-16 units, which differs where a character above U+FFFF meets one
 * in U+E000..U+FFFF. A lone surrogate counts as U+FFFD, the character Go's JSON decoder turns it into.
 */

/** The code point at `i` and how many UTF-16 units it takes; a lone surrogate is U+FFFD. */
function runeAt(s: string, i: number): [rune: number, width: number] {
  const c = s.charCodeAt(i);
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
    const d = s.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return [(c - 0xd800) * 0x400 + (d - 0xdc00) + 0x10000, 2];
  }
  if (c >= 0xd800 && c <= 0xdfff) return [0xfffd, 1];
  return [c, 1];
}

/** strings.Compare: -1, 0 or 1 in UTF-8 byte order. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    const x = a.charCodeAt(i);
    if (x === b.charCodeAt(j) && (x < 0xd800 || x > 0xdfff)) {
      i++;
      j++;
      continue;
    }
    const [rx, wx] = runeAt(a, i);
    const [ry, wy] = runeAt(b, j);
    if (rx !== ry) return rx < ry ? -1 : 1;
    i += wx;
    j += wy;
  }
  return i < a.length ? 1 : j < b.length ? -1 : 0;
}

/** The string as Go holds it after decoding JSON: each lone surrogate replaced by U+FFFD. */
export function goString(s: string): string {
  return s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}
