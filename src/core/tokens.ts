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

/** A function tool as a caller sends it beside the instructions (a realtime session's `tools`). */
export interface ToolDefinitionForCount {
  readonly type: 'function';
  readonly name: string;
  readonly description: string;
  readonly parameters: object;
}

/**
 * Counts tokens the way one tokenizer does; `name` is written in the cache plan. The core
 * has none of its own beyond the estimate: the service hands the compiler its tokenizer
 * (`src/tokenizer.ts`, o200k_base), so `src/core` stays dependency-free.
 */
export interface TokenCounter {
  /** What the plan says it counted with, e.g. `o200k_base`. */
  readonly name: string;
  /** Tokens of `text`. */
  count(text: string): number;
  /** Tokens the provider spends on these tool definitions, sent beside the instructions. */
  countTools(tools: readonly ToolDefinitionForCount[]): number;
}

/** The estimate as a counter: what a compile without a tokenizer plans with (`tokenizer: "estimate"`). */
export const ESTIMATE_COUNTER: TokenCounter = Object.freeze({
  name: 'estimate',
  count: approxTokens,
  countTools: (tools: readonly ToolDefinitionForCount[]) => (tools.length === 0 ? 0 : approxTokens(JSON.stringify(tools))),
});
