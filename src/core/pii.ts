/**
 * PII scrubbing for brain-derived text: email addresses and phone numbers in common
 * national and international forms. Precision matters as much as recall here: naive
 * phone patterns eat dates, times, versions, order numbers and ids inside URLs, so
 * candidates are validated (digit counts, separators, context) before they are replaced,
 * and URL spans are never touched.
 */

export type PiiKind = 'email' | 'phone';
export type RedactionCounts = Record<PiiKind, number>;

export interface ScrubResult {
  text: string;
  counts: RedactionCounts;
}

export const REDACTION_PLACEHOLDER: Record<PiiKind, string> = {
  email: '[email]',
  phone: '[phone]',
};

const URL_PATTERN = /\b(?:https?|ftp):\/\/[^\s<>"'`)\]]+|\bwww\.[^\s<>"'`)\]]+/gi;

const EMAIL_PATTERN = /(?<![\w.%+-])[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,62}[A-Za-z0-9_%+-])?@(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\w-])/g;

// A phone candidate: optional +country, then digit groups joined by single separators.
const PHONE_CANDIDATE = /(?<![\w+./:#-])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{1,4}\)[\s.-]?)?\d{1,5}(?:[\s.-]\d{1,5}){0,5}(?![\w/-]|[.:]\d)/g;

function digitsOf(text: string): string {
  return text.replace(/\D/g, '');
}

/** Decides whether a candidate span really looks like a phone number. */
function isPhone(candidate: string): boolean {
  const trimmed = candidate.trim();
  const digits = digitsOf(trimmed);
  const international = trimmed.startsWith('+');
  if (international) return digits.length >= 8 && digits.length <= 15;
  // Dates and times are never phones: 2026-11-30, 30.11.2026, 14:00.
  if (/^\d{4}[-./]\d{1,2}[-./]\d{1,2}$/.test(trimmed) || /^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$/.test(trimmed)) return false;
  // National forms: (415) 555-0100, 415-555-0100, 415.555.0100, 415 555 0100, 020 7946 0958.
  if (/^\(\d{3}\)\s?\d{3}[\s.-]\d{4}$/.test(trimmed)) return true;
  if (/^\d{3}([\s.-])\d{3}\1\d{4}$/.test(trimmed)) return true;
  if (/^0\d{2,4}[\s-]\d{3,4}[\s-]?\d{3,4}$/.test(trimmed) && digits.length >= 10 && digits.length <= 11) return true;
  return false;
}

function urlSpans(text: string): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  for (const match of text.matchAll(URL_PATTERN)) spans.push([match.index, match.index + match[0].length]);
  return spans;
}

function insideAny(spans: Array<[number, number]>, start: number, end: number): boolean {
  return spans.some(([from, to]) => start < to && end > from);
}

/**
 * Replaces emails and phone numbers with `[email]` / `[phone]` and counts them.
 * Deterministic; never changes text inside URLs; idempotent on its own output.
 */
export function scrubPii(text: string): ScrubResult {
  const counts: RedactionCounts = { email: 0, phone: 0 };
  if (text.length === 0) return { text, counts };
  let protectedSpans = urlSpans(text);
  let out = text.replace(EMAIL_PATTERN, (match, offset: number) => {
    if (insideAny(protectedSpans, offset, offset + match.length)) return match;
    counts.email++;
    return REDACTION_PLACEHOLDER.email;
  });
  if (counts.email > 0) protectedSpans = urlSpans(out);
  out = out.replace(PHONE_CANDIDATE, (match, offset: number) => {
    if (!/\d/.test(match) || insideAny(protectedSpans, offset, offset + match.length)) return match;
    const leading = match.length - match.trimStart().length;
    const trailing = match.length - match.trimEnd().length;
    const core = match.trim();
    if (!isPhone(core)) return match;
    counts.phone++;
    return `${match.slice(0, leading)}${REDACTION_PLACEHOLDER.phone}${match.slice(match.length - trailing)}`;
  });
  return { text: out, counts };
}

/** Adds redaction counts (for totals across blocks). */
export function addCounts(into: RedactionCounts, more: RedactionCounts): RedactionCounts {
  into.email += more.email;
  into.phone += more.phone;
  return into;
}
