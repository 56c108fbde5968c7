/**
 * The service's tokenizer: OpenAI's o200k_base (GPT-4o, GPT-4.1, GPT-5, the realtime
 * models), from `gpt-tokenizer`, handed to the compiler as a `TokenCounter` (src/core stays
 * dependency-free). The compiler only counts what its memo does not hold yet — a stable
 * block once per process, the clock line once a minute — so no request pays twice.
 *
 * Tool definitions are counted as OpenAI renders function tools into the model's context (a
 * TypeScript-like `namespace functions { … }` block), with gpt-tokenizer's
 * `estimateTokensInFunctions`: exact for names, descriptions and parameter lines, and an
 * approximation of the wrapper around them, which OpenAI does not document.
 *
 * The ranks are read, when first needed, from the package's `o200k_base.tiktoken` file
 * (OpenAI's own format, shipped beside the code), not imported as its 2.4 MB JavaScript array
 * literal: parsing and compiling that literal left ≈ 20 MB more resident memory and 6 MB more
 * heap in every process (peak RSS is held under 200 MB). `test/tokenizer.test.ts` holds the ranks equal
 * to the package's array, so the counts are the package's.
 *
 * @see https://github.com/niieani/gpt-tokenizer
 * @see https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken
 */
import { isUtf8 } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { GptEncoding } from 'gpt-tokenizer/GptEncoding';
import { estimateTokensInFunctions, type ChatCompletionFunctionDefinition } from 'gpt-tokenizer/functionCalling';
import type { TokenCounter, ToolDefinitionForCount } from './core/tokens.js';

/**
 * o200k_base's mergeable ranks as gpt-tokenizer takes them: by rank, a token's bytes as a
 * string when they are valid UTF-8, else as the byte values. Read once per process, when
 * first needed. Each token is decoded into one scratch buffer, not a Buffer of its own:
 * 91–123 ms against 156–204 ms with `Buffer.from` per line and a TextDecoder round trip
 * (8 fresh processes each, 2 busy cores); test/tokenizer.test.ts holds the ranks unchanged.
 */
export function o200kRanks(): Array<string | number[]> {
  const path = createRequire(import.meta.url).resolve('gpt-tokenizer/data/o200k_base.tiktoken');
  const text = readFileSync(path, 'latin1');
  let scratch = Buffer.allocUnsafe(1024);
  const ranks: Array<string | number[]> = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const space = text.indexOf(' ', start);
    if (space > start && space < end) {
      const base64 = text.slice(start, space);
      // Base64 decodes to fewer bytes than it has characters.
      if (base64.length > scratch.length) scratch = Buffer.allocUnsafe(base64.length);
      const length = scratch.write(base64, 0, 'base64');
      const decoded = scratch.toString('utf8', 0, length);
      // A string when the bytes are valid UTF-8 (decoding replaced nothing with U+FFFD, or the token is
      // U+FFFD itself) and do not start with a byte-order mark, which the package keeps as bytes.
      const bom = length >= 3 && scratch[0] === 0xef && scratch[1] === 0xbb && scratch[2] === 0xbf;
      const utf8 = !bom && (!decoded.includes('\uFFFD') || isUtf8(scratch.subarray(0, length)));
      ranks[Number(text.slice(space + 1, end))] = utf8 ? decoded : [...scratch.subarray(0, length)];
    }
    start = end + 1;
  }
  return ranks;
}

// The tokenizer's own memo of word pieces (100,000 by default) lives in the encoding; the
// compiler remembers whole blocks, so a small one is enough. It makes a text of words seen
// before ≈ 3× cheaper to count (400 memory files of the bench brain: 85–136 ms against
// 344–447 ms without it).
const MERGE_CACHE_ENTRIES = 10_000;

let built: GptEncoding | undefined;

/**
 * The encoding, built on first use rather than at import: reading and indexing 200,000 ranks
 * is most of the CPU a CLI process spends starting, and one that stops at a usage error
 * never counts a token. The service builds it before it listens (`loadO200kBase`).
 */
function encoding(): GptEncoding {
  if (built === undefined) {
    built = GptEncoding.getEncodingApi('o200k_base', o200kRanks);
    built.setMergeCacheSize(MERGE_CACHE_ENTRIES);
  }
  return built;
}

/** Builds o200k_base now (idempotent), so that no request pays for it. */
export function loadO200kBase(): void {
  encoding();
}

/**
 * The memo is bounded by entries, not bytes, and a piece is any run of letters, spaces or
 * punctuation: 2,000 counts of distinct 15,000-letter messages grew the heap by 178 MB
 * through it. What one count can add is at most its text's pieces, each kept with its
 * token array: ≲ 48 bytes per UTF-16 unit counted (a two-unit piece: key, array and map
 * entry). So the memo is emptied once the units counted since it was last emptied could
 * hold more than `MERGE_CACHE_BYTES`; ordinary text refills it in a few requests.
 */
export const MERGE_CACHE_BYTES = 4 * 1024 * 1024;
const BYTES_PER_UNIT = 48;
let unitsSinceClear = 0;

function rememberOrForget(units: number): void {
  unitsSinceClear += units;
  if (unitsSinceClear * BYTES_PER_UNIT <= MERGE_CACHE_BYTES) return;
  encoding().clearMergeCache();
  unitsSinceClear = units;
}

// Text that spells a special token (`<|endoftext|>`) is counted as the text it is, as the API
// treats it in content; gpt-tokenizer's default would throw, failing the compile.
const AS_TEXT = Object.freeze({ disallowedSpecial: new Set<string>() });

function count(text: string): number {
  rememberOrForget(text.length);
  return encoding().countTokens(text, AS_TEXT);
}

function asFunction(tool: ToolDefinitionForCount): ChatCompletionFunctionDefinition {
  return { name: tool.name, description: tool.description, parameters: tool.parameters as ChatCompletionFunctionDefinition['parameters'] };
}

export const O200K_BASE: TokenCounter = Object.freeze({
  name: 'o200k_base',
  count,
  countTools: (tools: readonly ToolDefinitionForCount[]) => (tools.length === 0 ? 0 : estimateTokensInFunctions(tools.map(asFunction), count)),
});
