// Byte-equivalents added per code fence and per table pipe: tokenizers split both finely.
const FENCE_SURCHARGE = 4;
const PIPE_SURCHARGE = 3;

/**
 * A deterministic, dependency-free token estimate: UTF-8 bytes / 4, plus a surcharge for
 * code fences (```) and table pipes. Only an estimate — real tokenizers differ by model —
 * but it never decreases when text is appended.
 */
export function approxTokens(text: string): number {
  let bytes = 0;
  let pipes = 0;
  let fences = 0;
  let backticks = 0;
  const length = text.length;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) {
      bytes += 1;
      if (code === 0x60) {
        if (++backticks === 3) {
          fences++;
          backticks = 0;
        }
        continue;
      }
      backticks = 0;
      if (code === 0x7c) pipes++;
      continue;
    }
    backticks = 0;
    if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3; // BMP, or a lone surrogate that UTF-8 encodes as U+FFFD
  }
  return Math.ceil((bytes + FENCE_SURCHARGE * fences + PIPE_SURCHARGE * pipes) / 4);
}
