/**
 * Text shaping for brain-derived content: single-line items, bounded excerpts cut at line
 * boundaries, HTML comment removal and the `sanitize=ascii` transliteration. Every function
 * is pure, linear in its input and never splits a UTF-16 surrogate pair.
 */

export const ELLIPSIS = '…';

// C0/C1 controls, DEL, line/paragraph separators and bidi marks, overrides and isolates: any of them
// could start a new prompt line or make a line read differently from its bytes.
const LINE_BREAKING = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]/g;
const WHITESPACE_RUN = /[\s\u00a0\u2000-\u200b\u202f\u205f\u3000]+/g;

/**
 * Whether a UTF-16 unit is what a regular expression's `\s` matches (ECMA-262 WhiteSpace and
 * LineTerminator), for the linear scans that replace patterns which backtracked.
 */
export function isRegexSpace(code: number): boolean {
  if (code <= 0x20) return code === 0x20 || (code >= 0x09 && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 || code === 0x1680 || (code >= 0x2000 && code <= 0x200a) || code === 0x2028 || code === 0x2029 ||
    code === 0x202f || code === 0x205f || code === 0x3000 || code === 0xfeff
  );
}

/** `text` without the spaces and tabs that end each of its `\n`-separated lines. Linear. */
export function trimLineEnds(text: string): string {
  let out = '';
  let from = 0;
  while (from <= text.length) {
    const newline = text.indexOf('\n', from);
    const end = newline === -1 ? text.length : newline;
    let cut = end;
    while (cut > from && (text.charCodeAt(cut - 1) === 0x20 || text.charCodeAt(cut - 1) === 0x09)) cut--;
    out += newline === -1 ? text.slice(from, cut) : `${text.slice(from, cut)}\n`;
    from = end + 1;
  }
  return out;
}

/** Cuts `text` to at most `maxChars` UTF-16 units without leaving half a surrogate pair. */
function sliceSafe(text: string, end: number): string {
  if (end <= 0) return '';
  if (end >= text.length) return text;
  const last = text.charCodeAt(end - 1);
  return last >= 0xd800 && last <= 0xdbff ? text.slice(0, end - 1) : text.slice(0, end);
}

/**
 * Clamps one line to `maxChars`, ending in an ellipsis when shortened. The cut prefers the
 * last space in the final fifth so words are not halved. Result length ≤ maxChars.
 */
export function clampLine(line: string, maxChars: number): string {
  if (line.length <= maxChars) return line;
  if (maxChars <= 0) return '';
  if (maxChars === 1) return ELLIPSIS;
  let cut = sliceSafe(line, maxChars - 1);
  const space = cut.lastIndexOf(' ');
  if (space >= Math.floor((maxChars - 1) * 0.8)) cut = cut.slice(0, space);
  return `${cut.trimEnd()}${ELLIPSIS}`;
}

/**
 * Makes `text` one prompt-safe line: newlines, control and bidi characters become spaces,
 * whitespace runs collapse, the ends are trimmed and the result is clamped to `maxChars`
 * with an ellipsis. The output never contains a line break, whatever the input.
 */
export function toSingleLine(text: string, maxChars: number): string {
  // Bound the work on huge inputs: only a prefix can survive the clamp anyway.
  const bounded = text.length > maxChars * 4 + 64 ? sliceSafe(text, maxChars * 4 + 64) : text;
  const single = bounded.replace(LINE_BREAKING, ' ').replace(WHITESPACE_RUN, ' ').trim();
  if (bounded.length === text.length) return clampLine(single, maxChars);
  return single.length < maxChars ? `${single}${ELLIPSIS}` : clampLine(`${single}${ELLIPSIS}`, maxChars);
}

/** At most this many chars of brain or caller text in one warning (issue 27). */
export const WARNING_QUOTE_CHARS = 200;

// Controls, line and paragraph separators, bidi marks, overrides and isolates, zero-width and
// other invisible format characters: shown as escapes, so a warning reads as its bytes do.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

/**
 * Brain or caller text as a warning quotes it: every control, bidi and invisible character
 * written as a `\uXXXX` escape (so no terminal escape, line break or override reaches a log,
 * a CLI or the viewer), clamped to `maxChars` with an ellipsis. Linear; reads at most
 * `maxChars + 1` chars of `text`.
 */
export function quoteForWarning(text: string, maxChars = WARNING_QUOTE_CHARS): string {
  const escaped = sliceSafe(text, maxChars + 1).replace(UNPRINTABLE, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return clampLine(text.length > maxChars + 1 ? `${escaped}${ELLIPSIS}` : escaped, maxChars);
}

/**
 * Where and what a schema found wrong in a brain file, for a warning: `at /personas: Unrecognized
 * key: "jupiter"`. Both may come from the file (keys, values), so they are one quote through
 * `quoteForWarning`: a 64 KiB key cannot make a 64 KiB warning.
 */
export function schemaProblem(issue: { readonly path: readonly PropertyKey[]; readonly message: string }): string {
  return `at ${quoteForWarning(`/${issue.path.map(String).join('/')}: ${issue.message}`)}`;
}

/**
 * Returns the longest prefix of `text` of at most `maxChars` that ends at a line boundary
 * (the newline itself is dropped). Never cuts mid-line, except when the first line alone
 * is too long: then that line is clamped with an ellipsis.
 */
export function cutAtLineBoundary(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars <= 0) return '';
  const boundary = text.lastIndexOf('\n', maxChars);
  if (boundary > 0) return text.slice(0, boundary).trimEnd();
  const firstEnd = text.indexOf('\n');
  return clampLine(firstEnd === -1 ? text : text.slice(0, firstEnd), maxChars);
}

/**
 * Keeps the newest part of a growing file: the longest suffix of at most `maxChars` that
 * starts at a line boundary. When the last line alone is too long, keeps its end behind a
 * leading ellipsis. Result length ≤ maxChars.
 */
export function keepNewest(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars <= 0) return '';
  const start = text.length - maxChars;
  // A newline at `start - 1` means the suffix already begins a line.
  if (text.charCodeAt(start - 1) === 10) return text.slice(start);
  const boundary = text.indexOf('\n', start);
  if (boundary !== -1 && boundary < text.length - 1) return text.slice(boundary + 1);
  const lastLine = text.slice(text.lastIndexOf('\n', text.length - 2) + 1);
  let tail = lastLine.slice(lastLine.length - (maxChars - 1));
  const first = tail.charCodeAt(0);
  if (first >= 0xdc00 && first <= 0xdfff) tail = tail.slice(1);
  return `${ELLIPSIS}${tail}`;
}

/**
 * Removes HTML comments (`<!-- id: t-12 -->`). As in rendered markdown, an unterminated
 * `<!--` hides the rest of the text. Linear time, whatever the nesting or repetition.
 */
export function stripHtmlComments(text: string): string {
  let open = text.indexOf('<!--');
  if (open === -1) return text;
  let out = '';
  let from = 0;
  while (open !== -1) {
    out += text.slice(from, open);
    const close = text.indexOf('-->', open + 4);
    if (close === -1) return out;
    from = close + 3;
    open = text.indexOf('<!--', from);
  }
  return out + text.slice(from);
}

/** What `toAscii` writes for each typographic character it maps. */
export const ASCII_MAP: Readonly<Record<string, string>> = Object.freeze({
  '\u2010': '-', '\u2011': '-', '\u2012': '-', '\u2013': '-', '\u2014': '--', '\u2015': '--',
  '\u2212': '-', '\u2043': '-', '\u00ad': '',
  '\u2018': "'", '\u2019': "'", '\u201a': "'", '\u201b': "'", '\u2032': "'", '\u00b4': "'",
  '\u201c': '"', '\u201d': '"', '\u201e': '"', '\u201f': '"', '\u2033': '"', '\u00ab': '"', '\u00bb': '"',
  '\u2039': "'", '\u203a': "'",
  '\u2026': '...', '\u2022': '-', '\u2023': '-', '\u25e6': '-', '\u00b7': '-', '\u25aa': '-', '\u25cf': '-',
  '\u2192': '->', '\u2190': '<-', '\u2194': '<->', '\u21d2': '=>', '\u21d0': '<=', '\u21d4': '<=>',
  '\u2264': '<=', '\u2265': '>=', '\u2260': '!=', '\u00d7': 'x', '\u00f7': '/', '\u00b1': '+/-',
  '\u00a0': ' ', '\u202f': ' ', '\u2007': ' ', '\u2009': ' ', '\u200a': ' ', '\u3000': ' ',
  '\u200b': '', '\u200c': '', '\u200d': '', '\u2060': '', '\ufeff': '',
  '\u00a9': '(c)', '\u00ae': '(R)', '\u2122': '(TM)', '\u00b0': ' degrees',
  '\u20ac': 'EUR ', '\u00a3': 'GBP ', '\u00a5': 'JPY ', '\u2044': '/', '\u00bd': '1/2', '\u00bc': '1/4', '\u00be': '3/4',
  '\u00df': 'ss', '\u00e6': 'ae', '\u00c6': 'AE', '\u0153': 'oe', '\u0152': 'OE', '\u00f8': 'o', '\u00d8': 'O',
  '\u0142': 'l', '\u0141': 'L', '\u0111': 'd', '\u0110': 'D', '\u00f0': 'd', '\u00fe': 'th', '\u00de': 'Th',
  '\u2713': 'v', '\u2714': 'v', '\u2717': 'x', '\u2718': 'x',
});

const MAPPED = new RegExp(`[${Object.keys(ASCII_MAP).filter((key) => key.length === 1).join('').replace(/[\]\\^-]/g, '\\$&')}]`, 'g');
const COMBINING_MARKS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]/g;

/**
 * Transliterates typographic Unicode to ASCII for speech engines (`sanitize=ascii`):
 * dashes, smart quotes, ellipsis, special spaces, bullets, arrows, accented letters; drops
 * whatever remains outside ASCII. The output is pure ASCII and keeps every line break.
 */
export function toAscii(text: string): string {
  if (/^[\u0000-\u007f]*$/.test(text)) return text;
  const mapped = text.replace(MAPPED, (char) => ASCII_MAP[char] ?? '');
  const decomposed = mapped.normalize('NFKD').replace(COMBINING_MARKS, '');
  const remapped = decomposed.replace(MAPPED, (char) => ASCII_MAP[char] ?? '');
  // A dropped symbol between two spaces (an emoji between words) leaves one space, not two.
  return remapped.replace(/( ?)[^\u0000-\u007f]+( ?)/g, (_match, before: string, after: string) =>
    before && after ? ' ' : before || after,
  );
}
