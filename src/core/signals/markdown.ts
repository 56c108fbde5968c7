/**
 * The small slice of markdown the brain parsers share: lines outside fenced code blocks
 * with HTML comments removed, headings, list items and a binary-junk check. Everything
 * here is linear and regex patterns are anchored with bounded repetition.
 */

export interface SourceLine {
  /** 1-based line number in the original text. */
  number: number;
  text: string;
}

/**
 * Lines of `text` outside ``` / ~~~ fences, CR removed and HTML comments stripped. A
 * comment spanning lines keeps the line numbering of the lines after it.
 */
export function markdownLines(text: string): SourceLine[] {
  const lines: SourceLine[] = [];
  let fence: string | undefined;
  const raw = stripCommentsKeepingLines(text).split('\n');
  for (let index = 0; index < raw.length; index++) {
    const line = raw[index]!.endsWith('\r') ? raw[index]!.slice(0, -1) : raw[index]!;
    const trimmed = line.trimStart();
    if (fence !== undefined) {
      if (trimmed.startsWith(fence) && trimmed.slice(fence.length).trim().length === 0) fence = undefined;
      continue;
    }
    const opening = /^(`{3,}|~{3,})/.exec(trimmed);
    if (opening && line.length - trimmed.length < 4) {
      fence = opening[1]!;
      continue;
    }
    lines.push({ number: index + 1, text: line });
  }
  return lines;
}

/** Removes HTML comments but keeps one newline per newline they held, so line numbers hold. */
function stripCommentsKeepingLines(text: string): string {
  if (!text.includes('<!--')) return text;
  let out = '';
  let from = 0;
  for (let open = text.indexOf('<!--'); open !== -1; open = text.indexOf('<!--', from)) {
    const close = text.indexOf('-->', open + 4);
    const end = close === -1 ? text.length : close + 3;
    out += text.slice(from, open) + '\n'.repeat(countNewlines(text, open, end));
    from = end;
    if (close === -1) return out;
  }
  return out + text.slice(from);
}

function countNewlines(text: string, start: number, end: number): number {
  let count = 0;
  for (let at = text.indexOf('\n', start); at !== -1 && at < end; at = text.indexOf('\n', at + 1)) count++;
  return count;
}

export interface Heading {
  level: number;
  text: string;
}

/** `## P0 — Urgent ##` → `{level: 2, text: 'P0 — Urgent'}`; undefined for anything else. */
export function headingOf(line: string): Heading | undefined {
  let indent = 0;
  while (indent < line.length && line[indent] === ' ') indent++;
  if (indent > 3 || line[indent] !== '#') return undefined;
  let level = 0;
  while (line[indent + level] === '#') level++;
  if (level > 6) return undefined;
  const rest = line.slice(indent + level);
  if (rest.length > 0 && rest[0] !== ' ' && rest[0] !== '\t') return undefined;
  let text = rest.trim();
  // Optional closing sequence: `## Title ##`.
  let end = text.length;
  while (end > 0 && text[end - 1] === '#') end--;
  if (end < text.length && (end === 0 || text[end - 1] === ' ' || text[end - 1] === '\t')) text = text.slice(0, end).trim();
  return { level, text };
}

/** Leading indentation width (a tab counts 4), used to tell top-level items from nested ones. */
export function indentOf(line: string): number {
  let width = 0;
  for (const char of line) {
    if (char === ' ') width++;
    else if (char === '\t') width += 4;
    else break;
  }
  return width;
}

/** A list item's marker and the text after it: `- x`, `* x`, `+ x`, `1. x`, `1) x`. */
export function listItemText(line: string): string | undefined {
  const match = /^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+(.*)$/s.exec(line);
  return match ? match[1]! : undefined;
}

/** `---`, `***`, `___` (optionally spaced): a thematic break, not content. */
export function isRule(line: string): boolean {
  return /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/.test(line);
}

/** True when a file has a line that is not blank, a heading or a rule (outside fences and comments). */
export function hasBodyLines(text: string): boolean {
  for (const { text: line } of markdownLines(text)) {
    const trimmed = line.trim();
    if (trimmed.length > 0 && headingOf(trimmed) === undefined && !isRule(trimmed)) return true;
  }
  return false;
}

/**
 * True when a text looks like binary junk rather than markdown: NUL bytes, or many
 * replacement characters (invalid UTF-8) or control characters in its first 4 KiB.
 */
export function looksBinary(text: string): boolean {
  const sample = text.slice(0, 4096);
  if (sample.length === 0) return false;
  if (sample.includes('\u0000')) return true;
  let suspicious = 0;
  for (let i = 0; i < sample.length; i++) {
    const code = sample.charCodeAt(i);
    if (code === 0xfffd || (code < 32 && code !== 9 && code !== 10 && code !== 13) || (code >= 0x7f && code < 0xa0)) suspicious++;
  }
  return suspicious / sample.length > 0.1;
}
