/**
 * How blocks become text. Trusted blocks go in the system prompt under a label line
 * `<<cc kind | authority | source>>`; no content can contain the marker `<<cc`, because
 * every `<<` that would start one is rewritten to `<\<`. Advisory and content blocks go
 * in the input prompt as one JSON object per line, with the same marker escaped, so their
 * text can neither produce a label nor leave its line.
 */
import type { Authority, BlockKind } from './types.js';

export const LABEL_MARKER = '<<cc';

/** Matches a label line exactly; nothing else in a system prompt does. */
export const LABEL_LINE = /^<<cc ([a-z-]+) \| ([a-z-]+) \| ([^\n]*)>>$/;

// `<<` followed (after optional whitespace) by `cc`, in any case.
const MARKER_START = /<<(?=\s*cc)/gi;
const LINE_BREAKS = /\r\n?|[\u0085\u2028\u2029]/g;
// C0/C1 controls except tab and newline, DEL, and invisible format characters that can
// hide text from a reader (zero-width space, word joiner, bidi marks, overrides and isolates, BOM).
const INVISIBLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;
// The bidi marks, embeddings, overrides and isolates: a reader would see their text reordered.
const BIDI_CONTROLS = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const UNSAFE_SOURCE = /[^\w.:/#@+=,~-]/g;
const JSON_LINE_BREAKS = /[\u0085\u2028\u2029]/g;

/** A source reference safe to print inside a label: one line of plain characters. */
export function labelSource(source: string): string {
  const cleaned = source.replace(UNSAFE_SOURCE, '_');
  return cleaned.length > 200 ? `${cleaned.slice(0, 200)}_` : cleaned || '_';
}

export function labelLine(kind: BlockKind, authority: Authority, source: string): string {
  return `${LABEL_MARKER} ${kind} | ${authority} | ${labelSource(source)}>>`;
}

// Half a surrogate pair has no UTF-8 form: encoders write U+FFFD, so the prompt says so too.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * Newlines normalised to `\n`, invisible and control characters removed, lone surrogates
 * replaced by U+FFFD (so the JSON and text answers carry the same UTF-8), outer blank space trimmed.
 */
export function normaliseText(text: string): string {
  return text.replace(LINE_BREAKS, '\n').replace(INVISIBLE, '').replace(LONE_SURROGATE, '\ufffd').trim();
}

/**
 * `text` without bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), so
 * no prompt line displays reordered ("Pay the invoice of $1000 today" for other bytes). The
 * one cleaning applied to caller content (task, message, evidence), which is otherwise kept
 * as sent; `normaliseText` removes them too.
 */
export function stripBidi(text: string): string {
  return text.replace(BIDI_CONTROLS, '');
}

/** Trusted text that cannot contain a label marker. */
export function escapeTrusted(text: string): string {
  return text.replace(MARKER_START, '<\\<');
}

/** One line of plain text: line breaks and controls become spaces, runs of spaces collapse. */
const NEEDS_FLATTENING = /[\u0000-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u202a-\u202e\u2028\u2029\u2060-\u2064\u2066-\u2069\ufeff]| {2}|^ | $/;

export function singleLine(text: string, maxChars: number): string {
  if (text.length <= maxChars && !NEEDS_FLATTENING.test(text)) return text;
  const line = text
    .replace(LINE_BREAKS, ' ')
    .replace(/[\n\t]/g, ' ')
    .replace(INVISIBLE, '')
    .replace(/ {2,}/g, ' ')
    .trim();
  if (line.length <= maxChars) return line;
  let end = maxChars - 3;
  if ((line.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--; // never split a surrogate pair
  return `${line.slice(0, end)}...`;
}

/**
 * One input-prompt line: a JSON object whose `text` parses back to exactly `text`.
 * JSON escapes quotes, backslashes and control characters; we also escape the line
 * separators JSON leaves alone and the `<` that would start a label marker.
 */
export function encodeInputLine(kind: BlockKind, authority: Authority, source: string, text: string): string {
  return JSON.stringify({ block: kind, authority, source, text })
    .replace(JSON_LINE_BREAKS, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .replace(MARKER_START, '\\u003c<');
}
