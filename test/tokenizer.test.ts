import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import bundledRanks from 'gpt-tokenizer/esm/bpeRanks/o200k_base';
import { loadO200kBase, MERGE_CACHE_BYTES, O200K_BASE, o200kRanks } from '../src/tokenizer.js';

describe('the service tokenizer (o200k_base)', () => {
  it('reads from the .tiktoken file exactly the ranks the package bundles as JavaScript: every token, as a string or its bytes', () => {
    const ranks = o200kRanks();
    expect(ranks.length).toBe(bundledRanks.length);
    // Compared in a plain loop and asserted once: an expect() per rank was most of this test's 2.6 s.
    let bytes = 0;
    const differing: number[] = [];
    for (let rank = 0; rank < ranks.length; rank++) {
      const ours = ranks[rank];
      const theirs = bundledRanks[rank];
      if (typeof theirs === 'string') {
        if (ours !== theirs) differing.push(rank);
      } else {
        bytes++;
        if (JSON.stringify(ours) !== JSON.stringify(theirs)) differing.push(rank);
      }
    }
    expect(differing.slice(0, 5).map((rank) => ({ rank, ours: ranks[rank], theirs: bundledRanks[rank] })), `${differing.length} ranks differ`).toEqual([]);
    // Tokens that are not valid UTF-8 alone (partial characters) are kept as bytes, as the package keeps them.
    expect(bytes).toBeGreaterThan(1000);
  });

  it('counts as the package’s own o200k_base does: prose, code, other scripts, emoji, split characters and special-token text', () => {
    const texts = [
      'You are Mars, a thought partner for the inner life of the person who runs this assistant.',
      'function add(a: number, b: number): number {\n  return a + b; // 42\n}',
      'Привет, мир! こんにちは世界。 مرحبا بالعالم 🙂🚀👩‍👩‍👧',
      '<<cc clock | trusted-directive | builtin:clock>>\nCurrent date and time: Monday 30 November 2026, 09:05 (America/Los_Angeles, UTC-08:00)',
      '\u00e9\u0301 \ud83d\ude00 \u2028 \u0000 tabs\tand   spaces',
    ];
    for (const text of texts) expect(O200K_BASE.count(text), text).toBe(countTokens(text));
    const special = 'You are Scribe. <|endoftext|><|im_start|>system';
    expect(O200K_BASE.count(special)).toBe(countTokens(special, { disallowedSpecial: new Set() }));
  });
});

describe('the tokenizer’s memo of word pieces is bounded by bytes (issue 25: memory under distinct inputs)', () => {
  // About 3 s of CPU alone; a busy machine stretches it past the default 20 s, and the time is not what it tests.
  it('regression: counting many distinct long pieces keeps at most MERGE_CACHE_BYTES of them, and the counts stay exact', { timeout: 120_000 }, () => {
    v8.setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    // Each text is one pre-token (a run of letters) that no other text shares: the memo keeps every one it is allowed to.
    // Pieces of 400 chars: merging a piece costs more than linear time in its length, and the memo keeps about as many
    // bytes per char, so shorter ones fill it for less CPU (3,600 pieces of 1,000 chars held as much for 6.7 s of CPU,
    // these 3.9 s). 7,200 of them stay under the memo's 10,000 entries, so that bound alone cannot keep them out.
    const texts = Array.from({ length: 7200 }, (_, i) => `x${i.toString(26).replace(/\d/g, (d) => 'qrstuvwxyz'[Number(d)]!)}${'abcdefgh'.repeat(50)}`);
    // The encoding itself (≈ 15 MB, built on first use) is not the memo: built before measuring.
    loadO200kBase();
    gc();
    const before = process.memoryUsage().heapUsed;
    for (const text of texts) O200K_BASE.count(text);
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // Kept whole, these 7,200 pieces hold ≈ 6.4 MB (key and token array each): measured on an encoding with the 10,000-entry memo and no byte bound.
    expect(grown).toBeLessThan(MERGE_CACHE_BYTES);
    for (const text of texts.slice(0, 20)) expect(O200K_BASE.count(text)).toBe(countTokens(text));
  });
});
