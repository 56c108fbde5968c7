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
 * @see https://github.com/niieani/gpt-tokenizer
 * @see https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken
 */
import { countTokens, setMergeCacheSize } from 'gpt-tokenizer/encoding/o200k_base';
import { estimateTokensInFunctions, type ChatCompletionFunctionDefinition } from 'gpt-tokenizer/functionCalling';
import type { TokenCounter, ToolDefinitionForCount } from './core/tokens.js';

// The tokenizer's own memo of word pieces (100,000 by default) lives in the module; the
// compiler remembers whole blocks, so a small one is enough and keeps the heap bounded.
const MERGE_CACHE_ENTRIES = 10_000;
setMergeCacheSize(MERGE_CACHE_ENTRIES);

// Text that spells a special token (`<|endoftext|>`) is counted as the text it is, as the API
// treats it in content; gpt-tokenizer's default would throw, failing the compile.
const AS_TEXT = Object.freeze({ disallowedSpecial: new Set<string>() });

function count(text: string): number {
  return countTokens(text, AS_TEXT);
}

function asFunction(tool: ToolDefinitionForCount): ChatCompletionFunctionDefinition {
  return { name: tool.name, description: tool.description, parameters: tool.parameters as ChatCompletionFunctionDefinition['parameters'] };
}

export const O200K_BASE: TokenCounter = Object.freeze({
  name: 'o200k_base',
  count,
  countTools: (tools: readonly ToolDefinitionForCount[]) => (tools.length === 0 ? 0 : estimateTokensInFunctions(tools.map(asFunction), count)),
});
