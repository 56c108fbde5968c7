/**
 * What the CLI prints to a terminal: text that came from a trace, a brain or a server, made
 * inert. A terminal acts on escape sequences — move the cursor, clear the screen, set the
 * title (OSC), write the clipboard (OSC 52), make a link — and on C0 and C1 controls, and
 * bidi controls make it show text in another order than its bytes. Each becomes a visible
 * marker (`⟨U+001B⟩`); a whole CSI or OSC sequence becomes one. Newline and tab stay. One
 * pass, linear in the text.
 */

const ESC = 0x1b;
const BEL = 0x07;
/** C1 forms of CSI, OSC and ST. */
const CSI_C1 = 0x9b;
const OSC_C1 = 0x9d;
const ST_C1 = 0x9c;

/** Bidi embedding, override and isolate controls and marks: text shown in another order than its bytes. */
export const BIDI_CONTROLS: ReadonlySet<number> = new Set([0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]);

/** A control or bidi character a terminal must not receive as it is. */
function unsafe(code: number): boolean {
  if (code === 0x09 || code === 0x0a) return false;
  return code < 0x20 || (code >= 0x7f && code <= 0x9f) || BIDI_CONTROLS.has(code);
}

export function marker(code: number): string {
  return `⟨U+${code.toString(16).toUpperCase().padStart(4, '0')}⟩`;
}

/** Where the escape sequence starting at `at` (ESC or a C1 introducer) ends: the index after it. */
function sequenceEnd(text: string, at: number): number {
  const code = text.charCodeAt(at);
  let i = at + 1;
  let kind: 'csi' | 'osc' | 'other' = code === CSI_C1 ? 'csi' : code === OSC_C1 ? 'osc' : 'other';
  if (code === ESC) {
    const next = text.charCodeAt(i);
    if (next === 0x5b) kind = 'csi';
    else if (next === 0x5d || next === 0x50 || next === 0x5f || next === 0x5e) kind = 'osc'; // OSC, DCS, APC, PM: strings to ST
    else return next >= 0x20 && next <= 0x7e ? i + 1 : i;
    i++;
  }
  if (kind === 'csi') {
    // Parameter and intermediate bytes, then one final byte.
    while (i < text.length && text.charCodeAt(i) >= 0x20 && text.charCodeAt(i) <= 0x3f) i++;
    while (i < text.length && text.charCodeAt(i) >= 0x20 && text.charCodeAt(i) <= 0x2f) i++;
    return i < text.length && text.charCodeAt(i) >= 0x40 && text.charCodeAt(i) <= 0x7e ? i + 1 : i;
  }
  if (kind === 'osc') {
    // To BEL or ST; a newline or another control ends it unterminated (and is handled on its own).
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === BEL || c === ST_C1) return i + 1;
      if (c === ESC) return text.charCodeAt(i + 1) === 0x5c ? i + 2 : i;
      if (c < 0x20) return i;
      i++;
    }
    return i;
  }
  return i;
}

/** `text` with every escape sequence, control (but newline and tab) and bidi control shown as a marker instead. */
export function terminalText(text: string): string {
  let out = '';
  let start = 0;
  let i = 0;
  while (i < text.length) {
    const code = text.charCodeAt(i);
    if (!unsafe(code)) {
      i++;
      continue;
    }
    out += text.slice(start, i) + marker(code);
    i = code === ESC || code === CSI_C1 || code === OSC_C1 ? sequenceEnd(text, i) : i + 1;
    start = i;
  }
  return start === 0 ? text : out + text.slice(start);
}

/**
 * JSON for a terminal: `JSON.stringify` already escapes C0 controls; DEL, C1 and bidi
 * controls are escaped too (`\u009b`), so the document stays the same data, byte for byte
 * once parsed, and nothing in it reaches the terminal as a control.
 */
export function terminalJson(value: unknown): string {
  const json = JSON.stringify(value, null, 2);
  let out = '';
  let start = 0;
  for (let i = 0; i < json.length; i++) {
    const code = json.charCodeAt(i);
    if (!unsafe(code)) continue;
    out += `${json.slice(start, i)}\\u${code.toString(16).padStart(4, '0')}`;
    start = i + 1;
  }
  return start === 0 ? json : out + json.slice(start);
}
