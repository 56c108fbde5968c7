/**
 * Exact per-block tokens for the events a trace read answers with: each block's text as
 * delivered counted by the tokenizer its event's cache plan named, so the run page says one
 * count per block, not an estimate beside exact checkpoints. A system block is counted from
 * its label line to the next block's label — the pieces the cache plan counts (src/core/cache-plan.ts),
 * so the blocks up to a checkpoint plus the tool definitions make its tokens — and an input
 * block as its JSON line. Counts are remembered by the piece's text digest, a bounded number.
 */
import { LRUCache } from 'lru-cache';
import { sha256Hex } from '../core/digest.js';
import type { TokenCounter } from '../core/tokens.js';
import type { TraceEvent } from '../../schemas/trace.js';

/** Pieces remembered: a prompt's blocks, for a few hundred distinct prompts. */
const REMEMBERED = 4096;

export function createBlockTokens(counter: TokenCounter): (events: readonly TraceEvent[]) => void {
  const counts = new LRUCache<string, number>({ max: REMEMBERED });
  const tokensOf = (text: string) => {
    const key = sha256Hex(text);
    let tokens = counts.get(key);
    if (tokens === undefined) counts.set(key, (tokens = counter.count(text)));
    return tokens;
  };
  return (events) => {
    for (const event of events) {
      const blocks = event.blocks ?? [];
      if (event.cache?.['tokenizer'] !== counter.name || blocks.length === 0 || event.verified !== true) continue;
      const system = event.segments?.system ?? [];
      const input = event.segments?.input ?? [];
      const trusted = blocks.filter((block) => block.authority === 'trusted-directive');
      if (trusted.length !== system.length || blocks.length - trusted.length !== input.length) continue;
      const systemPrompt = event.systemPrompt ?? '';
      // Where each system piece starts: at its label, after the blank line that separates it from the one before.
      const starts = system.map((segment) => segment.offset + (/^\n*/.exec(systemPrompt.slice(segment.offset, segment.offset + segment.chars))?.[0].length ?? 0));
      let systemAt = 0;
      let inputAt = 0;
      for (const block of blocks) {
        if (block.authority === 'trusted-directive') {
          const at = systemAt++;
          block.tokens = tokensOf(systemPrompt.slice(at === 0 ? 0 : starts[at]!, starts[at + 1] ?? systemPrompt.length));
        } else {
          const segment = input[inputAt++]!;
          block.tokens = tokensOf((event.inputPrompt ?? '').slice(segment.offset, segment.offset + segment.chars));
        }
      }
    }
  };
}
