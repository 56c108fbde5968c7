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
 * The ranks are read from the package's `o200k_base.tiktoken` file (OpenAI's own format,
 * shipped beside the code), not imported as its 2.4 MB JavaScript array literal: parsing and
 * compiling that literal left ≈ 20 MB more resident memory and 6 MB more heap in every
 * process (SPEC §7 bounds RSS at 200 MB). `test/tokenizer.test.ts` holds the ranks equal
 * to the package's array, so the counts are the package's.
 *
 * @see https://github.com/niieani/gpt-tokenizer
 * @see https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { GptEncoding } from 'gpt-tokenizer/GptEncoding';
import { estimateTokensInFunctions, type ChatCompletionFunctionDefinition } from 'gpt-tokenizer/functionCalling';
import type { TokenCounter, ToolDefinitionForCount } from './core/tokens.js';

/**
 * o200k_base's mergeable ranks as gpt-tokenizer takes them: by rank, a token's bytes as a
 * string when they are valid UTF-8, else as the byte values. Read once, at start-up.
 */
export function o200kRanks(): Array<string | number[]> {
  const path = createRequire(import.meta.url).resolve('gpt-tokenizer/data/o200k_base.tiktoken');
  const text = readFileSync(path, 'latin1');
  const utf8 = new TextDecoder('utf-8');
  const ranks: Array<string | number[]> = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const space = text.indexOf(' ', start);
    if (space > start && space < end) {
      const bytes = Buffer.from(text.slice(start, space), 'base64');
      // A string when it decodes and encodes back to the very bytes (not a partial character; not a byte-order mark, which decoding drops).
      const decoded = utf8.decode(bytes);
      ranks[Number(text.slice(space + 1, end))] = Buffer.byteLength(decoded, 'utf8') === bytes.length && Buffer.from(decoded, 'utf8').equals(bytes) ? decoded : [...bytes];
    }
    start = end + 1;
  }
  return ranks;
}

const encoding = GptEncoding.getEncodingApi('o200k_base', o200kRanks);

// The tokenizer's own memo of word pieces (100,000 by default) lives in the encoding; the
// compiler remembers whole blocks, so a small one is enough. It makes a text of words seen
// before ≈ 3× cheaper to count (400 memory files of the bench brain: 85–136 ms against
// 344–447 ms without it).
const MERGE_CACHE_ENTRIES = 10_000;
encoding.setMergeCacheSize(MERGE_CACHE_ENTRIES);

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
  encoding.clearMergeCache();
  unitsSinceClear = units;
}

// Text that spells a special token (`<|endoftext|>`) is counted as the text it is, as the API
// treats it in content; gpt-tokenizer's default would throw, failing the compile.
const AS_TEXT = Object.freeze({ disallowedSpecial: new Set<string>() });

function count(text: string): number {
  rememberOrForget(text.length);
  return encoding.countTokens(text, AS_TEXT);
}

function asFunction(tool: ToolDefinitionForCount): ChatCompletionFunctionDefinition {
  return { name: tool.name, description: tool.description, parameters: tool.parameters as ChatCompletionFunctionDefinition['parameters'] };
}

export const O200K_BASE: TokenCounter = Object.freeze({
  name: 'o200k_base',
  count,
  countTools: (tools: readonly ToolDefinitionForCount[]) => (tools.length === 0 ? 0 : estimateTokensInFunctions(tools.map(asFunction), count)),
});
