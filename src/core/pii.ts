/**
 * PII scrubbing for brain-derived text: email addresses and phone numbers in common
 * national and international forms. Precision matters as much as recall here: naive
 * phone patterns eat dates, times, versions, order numbers and ids inside URLs, so digit
 * runs are only candidates; a candidate is replaced when its shape is a phone number's
 * (international `+`/`00`, North American, trunk-`0` national) or when a phone word
 * ("call", "tel", "mobile"…) stands right before it, and never when an id word ("ticket",
 * "order", "PR"…) does. Phone numbers inside URLs are left alone; emails are not.
 *
 * Every pattern is linear: separators are mandatory between digit groups and all
 * repetition is bounded, so a 5 MB adversarial text scrubs in linear time.
 */

export type PiiKind = 'email' | 'phone';
export type RedactionCounts = Record<PiiKind, number>;

/** None redacted (shared, frozen). */
export const NO_REDACTIONS: Readonly<RedactionCounts> = Object.freeze({ email: 0, phone: 0 });

export interface ScrubResult {
  text: string;
  counts: RedactionCounts;
}

export const REDACTION_PLACEHOLDER: Record<PiiKind, string> = {
  email: '[email]',
  phone: '[phone]',
};

const URL_PATTERN = /\b(?:https?|ftp|wss?):\/\/[^\s<>"'`)\]]+|\bwww\.[^\s<>"'`)\]]+/giu;

const LOCAL = "[\\p{L}\\p{N}](?:[\\p{L}\\p{N}._%+'-]{0,62}[\\p{L}\\p{N}_%+-])?";
const LABEL = '[\\p{L}\\p{N}](?:[\\p{L}\\p{N}-]{0,61}[\\p{L}\\p{N}])?';
// Not followed by more address characters, nor by `:path` (an scp/git remote such as git@host:org/repo).
const EMAIL_END = '(?![\\p{L}\\p{N}_-]|:[^\\s])';
// `@` or the fullwidth `＠` of CJK text.
const EMAIL_PATTERN = new RegExp(
  `(?<![\\p{L}\\p{N}._%+-])${LOCAL}[@\\uff20](?:${LABEL}\\.){1,8}(\\p{L}{2,24})${EMAIL_END}`,
  'gu',
);
// RFC 5322 quoted local parts: `"john smith"@example.com`.
const QUOTED_EMAIL_PATTERN = new RegExp(`"[^"\\\\\\n]{1,64}"[@\\uff20](?:${LABEL}\\.){1,8}(\\p{L}{2,24})${EMAIL_END}`, 'gu');
// `icon@2x.png`, `hero@3x.webp`: file names, not addresses (none of these is a top-level domain).
const FILE_EXTENSIONS: ReadonlySet<string> = new Set([
  'png', 'jpg', 'jpeg', 'gif', 'svg', 'webp', 'avif', 'heic', 'bmp', 'tif', 'tiff', 'ico', 'psd', 'pdf', 'js', 'mjs',
  'cjs', 'ts', 'tsx', 'jsx', 'json', 'yaml', 'yml', 'toml', 'lock', 'css', 'scss', 'html', 'htm', 'txt', 'log', 'csv',
  'docx', 'xlsx', 'pptx', 'wav',
]);
// `jordan [at] example [dot] org`, `jordan(at)example.org`: the usual anti-scraper spellings.
const AT = '[ ]?[\\[({][ ]?at[ ]?[\\])}][ ]?';
const DOT = '(?:[ ]?[\\[({][ ]?dot[ ]?[\\])}][ ]?|\\.)';
const OBFUSCATED_EMAIL_PATTERN = new RegExp(
  `(?<![\\p{L}\\p{N}._%+-])[\\p{L}\\p{N}._%+-]{1,64}${AT}[\\p{L}\\p{N}-]{1,63}(?:${DOT}[\\p{L}\\p{N}-]{1,63}){1,6}${EMAIL_END}`,
  'giu',
);

// Digit groups joined by one separator (space, dot, hyphen, dash, optionally spaced), or
// touching a parenthesised group: `(415)555-0100`, `+44 (0)20 7946 0958`.
const SPACE = '[ \\t\\u00a0\\u202f]';
// A slash too (`030/901820`), which isPhone accepts only after an area code.
const SEP = `(?:${SPACE}?[-.\\u2010-\\u2015]${SPACE}?|${SPACE}|/)`;
const GROUP = '(?:\\(\\d{1,5}\\)|\\d{1,15})';
const PHONE_CANDIDATE = new RegExp(
  // Not glued to a word, an id (#, /, @, -), a currency sign, a placeholder, or the end of
  // another number (3.1, 1,2, 14:00). A `+` may follow a number or placeholder directly.
  // (The leading lookahead only lets the engine skip non-candidates fast.)
  `(?=[+(\\d])(?:(?<=[\\p{N}\\]])(?=\\+)|(?<![\\p{L}\\p{N}_+/#@$€£¥\\-\\u2010-\\u2015=&?%\\]]|[\\d\\]][.:,]))` +
    `(?:\\+${SPACE}?)?${GROUP}(?:${SEP}${GROUP}|(?<=\\))\\d{1,15}|\\(\\d{1,5}\\)){0,63}` +
    // Not followed by more word, path or address characters, nor by the rest of a number.
    `(?![\\p{L}\\p{N}_/@%]|[.:,\\-\\u2010-\\u2015]\\d)`,
  'gu',
);

const EXCLUDING_WORDS: ReadonlySet<string> = new Set([
  'order', 'orders', 'invoice', 'invoices', 'inv', 'ticket', 'tickets', 'issue', 'issues', 'pr', 'prs', 'mr',
  'bug', 'bugs', 'case', 'ref', 'refs', 'reference', 'id', 'ids', 'version', 'ver', 'v', 'build', 'release',
  'po', 'sku', 'serial', 'tracking', 'account', 'acct', 'iban', 'isbn', 'room', 'flight', 'page', 'pages',
  'pp', 'item', 'items', 'job', 'jobs', 'run', 'step', 'row', 'rev', 'revision', 'commit',
  'patch', 'receipt', 'confirmation', 'booking', 'reservation', 'policy', 'claim', 'batch', 'lot', 'model',
  'part', 'usd', 'eur', 'gbp', 'jpy', 'chf', 'inr', 'aud', 'cad',
]);
// Words between an id word and its number: "order no. 123", "issue number 4821".
const NUMBER_WORDS: ReadonlySet<string> = new Set(['no', 'nr', 'num', 'number', 'nos']);
const PHONE_WORDS: ReadonlySet<string> = new Set([
  'call', 'calls', 'called', 'calling', 'phone', 'phones', 'phoned', 'tel', 'telephone', 'mobile', 'mob',
  'cell', 'cellphone', 'text', 'texts', 'texted', 'sms', 'whatsapp', 'fax', 'ring', 'rang', 'dial', 'dialed',
  'dialled', 'reach', 'contact', 'landline', 'hotline', 'handy', 'number', 'numbers',
]);

interface Group {
  start: number;
  end: number;
  digits: string;
  paren: boolean;
  /** Separator text before this group (empty for the first or a touching paren group). */
  sepBefore: string;
}

interface Word {
  start: number;
  end: number;
  lower: string;
}

/** Computed once per text, only when a candidate needs context. */
interface Scan {
  words: Word[];
  newlines: number[];
}

function scanText(text: string): Scan {
  const newlines: number[] = [];
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) newlines.push(at);
  return { words: lettersWords(text), newlines };
}

/** Letter words of `text`, in order, with placeholders masked so a second pass sees what the first saw. */
function lettersWords(text: string): Word[] {
  const words: Word[] = [];
  for (const match of text.matchAll(/\[(?:email|phone)\]|\p{L}+/gu)) {
    if (match[0].startsWith('[')) continue;
    words.push({ start: match.index, end: match.index + match[0].length, lower: match[0].toLowerCase() });
  }
  return words;
}

/** Index of the last word ending at or before `position` (binary search), or -1. */
function lastWordBefore(words: Word[], position: number): number {
  let low = 0;
  let high = words.length - 1;
  let found = -1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (words[mid]!.end <= position) {
      found = mid;
      low = mid + 1;
    } else high = mid - 1;
  }
  return found;
}

interface Context {
  phoneWord: boolean;
  idWord: boolean;
}

/** Start of the line holding `position`, from the sorted newline offsets (binary search). */
function lineStartOf(newlines: number[], position: number): number {
  let low = 0;
  let high = newlines.length - 1;
  let start = 0;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (newlines[mid]! < position) {
      start = newlines[mid]! + 1;
      low = mid + 1;
    } else high = mid - 1;
  }
  return start;
}

function contextBefore(text: string, scan: Scan, position: number): Context {
  const { words } = scan;
  const lineStart = lineStartOf(scan.newlines, position);
  const last = lastWordBefore(words, position);
  let phoneWord = false;
  for (let k = last; k >= 0 && k > last - 3 && words[k]!.start >= lineStart; k--) {
    if (PHONE_WORDS.has(words[k]!.lower)) phoneWord = true;
  }
  // An id word must touch the number: only spaces, `:`, `#` or `.` between, or a "no." word.
  let idWord = false;
  let gapEnd = position;
  for (let k = last; k >= 0 && k > last - 3 && words[k]!.start >= lineStart; k--) {
    const word = words[k]!;
    if (gapEnd - word.end > 64) break;
    // Placeholders count as space, so a second pass judges what the first pass judged.
    const gap = text.slice(word.end, gapEnd).replace(/\[(?:email|phone)\]/g, ' ').replace(/\s+/g, ' ');
    if (!/^[\s:#.]{0,4}$/.test(gap)) break;
    if (EXCLUDING_WORDS.has(word.lower)) idWord = true;
    if (!NUMBER_WORDS.has(word.lower)) break;
    gapEnd = word.start;
  }
  return { phoneWord, idWord };
}

function isYear(digits: string): boolean {
  return digits.length === 4 && (digits.startsWith('19') || digits.startsWith('20'));
}

function isDayOrMonth(group: Group): boolean {
  if (group.digits.length > 2) return false;
  const value = Number(group.digits);
  return value >= 1 && value <= 31;
}

/** Dates in any group triple: 2026-11-30, 30.11.2026, 11/30/2026, or 20261130 alone. */
function holdsDate(groups: Group[]): boolean {
  if (groups.length === 1) {
    const digits = groups[0]!.digits;
    return digits.length === 8 && isYear(digits.slice(0, 4)) && Number(digits.slice(4, 6)) <= 12 && Number(digits.slice(6)) <= 31;
  }
  for (let i = 0; i + 2 < groups.length; i++) {
    const [a, b, c] = [groups[i]!, groups[i + 1]!, groups[i + 2]!];
    if (a.paren || b.paren || c.paren) continue;
    if (isYear(a.digits) && isDayOrMonth(b) && isDayOrMonth(c)) return true;
    if (isDayOrMonth(a) && isDayOrMonth(b) && isYear(c.digits)) return true;
  }
  return false;
}

function isNorthAmerican(groups: Group[]): boolean {
  const offset = groups.length === 4 && groups[0]!.digits === '1' ? 1 : 0;
  if (groups.length - offset !== 3) return false;
  const [area, exchange, line] = [groups[offset]!.digits, groups[offset + 1]!.digits, groups[offset + 2]!.digits];
  // Area code and exchange never start with 0 or 1 in the North American plan.
  return area.length === 3 && exchange.length === 3 && line.length === 4 && area[0]! >= '2' && exchange[0]! >= '2';
}

function isTrunkNational(groups: Group[], digitCount: number): boolean {
  const first = groups[0]!;
  if (!/^0[1-9]/.test(first.digits)) return false;
  // Written without separators (07700900123) only at full national length.
  if (groups.length === 1) return !first.paren && (digitCount === 10 || digitCount === 11);
  if (first.digits.length < 2 || first.digits.length > 5) return false;
  if (digitCount < 9 || digitCount > 11) return false;
  return groups.every((group) => group.digits.length >= 2);
}

/** `(11) 98765-4321`, `(495) 123-45-67`: an area code in parentheses, then at least two groups. */
function isParenAreaCode(groups: Group[], digitCount: number): boolean {
  const first = groups[0]!;
  if (!first.paren || !/^[1-9]\d{1,3}$/.test(first.digits) || isYear(first.digits)) return false;
  return groups.length >= 3 && digitCount >= 9 && digitCount <= 12 && groups.every((group) => group.digits.length >= 2);
}

/** Decides whether a window of digit groups really is a phone number. */
function isPhone(text: string, groups: Group[], context: Context): boolean {
  // A slash only ever follows an area code (`030/901820`, `312/555-0142`); elsewhere it is a date, a fraction or a path.
  for (let i = 0; i < groups.length; i++) if (groups[i]!.sepBefore.includes('/') && i !== 1) return false;
  const digits = groups.map((group) => group.digits).join('');
  const plus = text.charCodeAt(groups[0]!.start) === 43;
  if (digits.length < 7 || digits.length > 17 || holdsDate(groups)) return false;
  if (plus) return !digits.startsWith('0') && digits.length >= 8 && digits.length <= 15;
  if (digits.startsWith('00') && groups.length >= 2) return digits.length >= 10 && digits.length <= 17 && digits[2] !== '0';
  if (context.idWord) return false;
  if (isNorthAmerican(groups) || isTrunkNational(groups, digits.length) || isParenAreaCode(groups, digits.length)) return true;
  return context.phoneWord && digits.length <= 15 && (groups.length >= 2 || digits.length >= 10);
}

function parseGroups(text: string, start: number, end: number): Group[] {
  const groups: Group[] = [];
  const pattern = /\+?\(?(\d+)\)?/g;
  pattern.lastIndex = start;
  let previousEnd = start;
  for (let match = pattern.exec(text); match !== null && match.index < end; match = pattern.exec(text)) {
    groups.push({
      start: match.index,
      end: match.index + match[0].length,
      digits: match[1]!,
      paren: match[0].includes('('),
      sepBefore: text.slice(previousEnd, match.index),
    });
    previousEnd = match.index + match[0].length;
  }
  return groups;
}

const MAX_GROUPS_PER_PHONE = 8;

// Phone windows start and end at whitespace between groups (or at the candidate's ends).
function hasSpace(separator: string): boolean {
  return /\s/u.test(separator);
}

/** Phone spans inside one candidate: the longest acceptable window at each whitespace boundary, left to right. */
function phoneSpans(text: string, scan: Scan, start: number, end: number): Array<[number, number]> {
  const groups = parseGroups(text, start, end);
  const spans: Array<[number, number]> = [];
  const digitsUpTo = [0];
  for (const group of groups) digitsUpTo.push(digitsUpTo[digitsUpTo.length - 1]! + group.digits.length);
  // An id word before the run covers the whole run ("issue number 415 555 0100").
  const runHasIdWord = contextBefore(text, scan, groups[0]!.start).idWord;
  let i = 0;
  while (i < groups.length) {
    let accepted = -1;
    if (i === 0 || hasSpace(groups[i]!.sepBefore)) {
      let context: Context | undefined;
      for (let j = Math.min(groups.length, i + MAX_GROUPS_PER_PHONE) - 1; j >= i; j--) {
        const digitCount = digitsUpTo[j + 1]! - digitsUpTo[i]!;
        if (digitCount < 7 || digitCount > 17) continue;
        if (j < groups.length - 1 && !hasSpace(groups[j + 1]!.sepBefore)) continue;
        context ??= { ...contextBefore(text, scan, groups[i]!.start), idWord: runHasIdWord };
        if (isPhone(text, groups.slice(i, j + 1), context)) {
          accepted = j;
          break;
        }
      }
    }
    if (accepted === -1) {
      i++;
      continue;
    }
    spans.push([groups[i]!.start, groups[accepted]!.end]);
    i = accepted + 1;
  }
  return spans;
}

function urlSpans(text: string): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  for (const match of text.matchAll(URL_PATTERN)) spans.push([match.index, match.index + match[0].length]);
  return spans;
}

function replaceEmails(text: string, counts: RedactionCounts): string {
  if (!text.includes('@') && !text.includes('\uff20') && !/[\[({][ ]?at[ ]?[\])}]/i.test(text)) return text;
  const replace = (match: string, tld?: string) => {
    if (typeof tld === 'string' && FILE_EXTENSIONS.has(tld.toLowerCase())) return match;
    counts.email++;
    return REDACTION_PLACEHOLDER.email;
  };
  return text.replace(QUOTED_EMAIL_PATTERN, replace).replace(EMAIL_PATTERN, replace).replace(OBFUSCATED_EMAIL_PATTERN, replace);
}

// Fullwidth forms (`＋８１ ３-１２３４`) and the ideographic space, folded to ASCII one code unit for one,
// so every offset found in the folded text holds in the original.
const WIDE_FORMS = /[\uff01-\uff5e\u3000]/g;

function foldWide(text: string): string {
  return text.replace(WIDE_FORMS, (char) => (char === '\u3000' ? ' ' : String.fromCharCode(char.charCodeAt(0) - 0xfee0)));
}

function replacePhones(original: string, counts: RedactionCounts): string {
  const text = /[\uff01-\uff5e\u3000]/.test(original) ? foldWide(original) : original;
  let urls: Array<[number, number]> | undefined;
  let scan: Scan | undefined;
  let out = '';
  let from = 0;
  let url = 0;
  for (const match of text.matchAll(PHONE_CANDIDATE)) {
    if (digitCount(match[0]) < 7) continue;
    const start = match.index;
    const end = start + match[0].length;
    urls ??= text.includes('://') || /www\./i.test(text) ? urlSpans(text) : [];
    while (url < urls.length && urls[url]![1] <= start) url++;
    if (url < urls.length && urls[url]![0] < end) continue;
    scan ??= scanText(text);
    for (const [spanStart, spanEnd] of phoneSpans(text, scan, start, end)) {
      out += original.slice(from, spanStart) + REDACTION_PLACEHOLDER.phone;
      from = spanEnd;
      counts.phone++;
    }
  }
  return from === 0 ? original : out + original.slice(from);
}

function digitCount(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 48 && code <= 57) count++;
  }
  return count;
}

/**
 * Replaces emails and phone numbers with `[email]` / `[phone]` and counts them (counts
 * only, never values). Deterministic, linear in the input, never changes a phone-shaped id
 * inside a URL, never spans a line break, and idempotent: scrubbing its own output changes
 * nothing and counts zero.
 */
export function scrubPii(text: string): ScrubResult {
  const counts: RedactionCounts = { email: 0, phone: 0 };
  if (text.length === 0) return { text, counts };
  const withoutEmails = replaceEmails(text, counts);
  return { text: replacePhones(withoutEmails, counts), counts };
}

/** Adds redaction counts (for totals across blocks). */
export function addCounts(into: RedactionCounts, more: Readonly<RedactionCounts>): RedactionCounts {
  into.email += more.email;
  into.phone += more.phone;
  return into;
}

const PARTIAL_PLACEHOLDER = /\[(?:e(?:m(?:a(?:il?)?)?)?|p(?:h(?:o(?:ne?)?)?)?)?$/;

/**
 * Clamps already-scrubbed text to `maxChars` (ellipsis included) without leaving a broken
 * `[email]`/`[phone]` placeholder at the cut, so a later scrub or reader sees whole markers.
 */
export function clampRedacted(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars <= 0) return '';
  let body = text.slice(0, maxChars - 1);
  const last = body.charCodeAt(body.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) body = body.slice(0, -1);
  const space = body.lastIndexOf(' ');
  if (space >= Math.floor((maxChars - 1) * 0.8)) body = body.slice(0, space);
  return `${body.replace(PARTIAL_PLACEHOLDER, '').trimEnd()}…`;
}
