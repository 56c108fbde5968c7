import { describe, expect, it } from 'vitest';
import { createCaches } from '../../src/caches.js';
import { compile, createCompiler, type CompileInput } from '../../src/core/index.js';
import { O200K_BASE } from '../../src/tokenizer.js';
import { chatTurn, voicePersona } from './golden/cases.js';
import { HEAVY_TEST_MS } from '../helpers/bounds.js';

const at = (input: CompileInput, iso: string): CompileInput => ({ ...input, clock: { ...input.clock!, now: new Date(iso) } });

describe('the stable prefix is laid out once, and a compile adds the volatile tail alone', () => {
  it('a new minute hands out the stable blocks, segments and boundaries of the minute before, and equals a plain compile', () => {
    const caches = createCaches();
    const { compile: memoised } = createCompiler({ memo: caches.compiler });
    const first = memoised(at(voicePersona(), '2026-11-30T17:05:00Z'));
    const later = memoised(at(voicePersona(), '2026-11-30T21:48:00Z'));
    expect(later).toEqual(compile(at(voicePersona(), '2026-11-30T21:48:00Z')));
    const stableCount = first.blocks.findIndex((block) => block.cacheClass === 'volatile');
    expect(stableCount).toBeGreaterThan(3);
    for (let i = 0; i < stableCount; i++) {
      expect(later.blocks[i]).toBe(first.blocks[i]);
      expect(later.segments.system[i]).toBe(first.segments.system[i]);
    }
    const stableBoundaries = first.cache.boundaries.filter((boundary) => boundary.class !== 'volatile');
    stableBoundaries.forEach((boundary, i) => expect(later.cache.boundaries[i]).toBe(boundary));
    // Only the clock block and what follows it differ.
    expect(later.blocks[stableCount]!.content).not.toBe(first.blocks[stableCount]!.content);
    expect(later.promptSha256).not.toBe(first.promptSha256);
    expect(later.inputSha256).toBe(first.inputSha256);
  });

  it('a prefix whose text is the same but whose sources needed other redactions is its own part (the counts are not in the text)', () => {
    const { compile: memoised } = createCompiler({ memo: createCaches().compiler });
    const scrubbed = chatTurn({ identity: { source: 'workers/scribe/identity.md', text: 'You are Scribe. Mail [email] for billing.', brainDerived: true } });
    const raw = chatTurn({ identity: { source: 'workers/scribe/identity.md', text: 'You are Scribe. Mail billing@example.com for billing.', brainDerived: true } });
    const a = memoised(scrubbed);
    const b = memoised(raw);
    expect(b.systemPrompt).toBe(a.systemPrompt);
    expect(b.redactions.email).toBe(a.redactions.email + 1);
    expect(b).toEqual(compile(raw));
    expect(memoised(scrubbed)).toEqual(compile(scrubbed));
  });

  it('input blocks that all recur (a persona live context) are joined and hashed once; a message that does not is hashed per compile', () => {
    const caches = createCaches();
    const { compile: memoised } = createCompiler({ memo: caches.compiler });
    const one = memoised(at(voicePersona(), '2026-11-30T17:05:00Z'));
    const two = memoised(at(voicePersona(), '2026-11-30T17:06:00Z'));
    expect(two.inputPrompt).toBe(one.inputPrompt);
    expect(two.blocks.at(-1)).toBe(one.blocks.at(-1));
    const turn = memoised(chatTurn());
    const next = memoised(chatTurn({ message: { source: 'request:message', text: 'Another turn.' } }));
    expect(next.inputSha256).not.toBe(turn.inputSha256);
    expect(next).toEqual(compile(chatTurn({ message: { source: 'request:message', text: 'Another turn.' } })));
  });

  it('one stable prefix, finished with each compile\'s own engine and session tools, gives byte for byte what a plain compile of each gives', () => {
    const caches = createCaches();
    const { compile: memoised } = createCompiler({ memo: caches.compiler, tokenizer: O200K_BASE });
    const plain = createCompiler({ tokenizer: O200K_BASE });
    const tools = voicePersona().sessionTools!;
    const variants: CompileInput[] = [
      voicePersona(),
      voicePersona({ engine: 'gpt-realtime' }),
      voicePersona({ sessionTools: [] }),
      voicePersona({ sessionTools: tools.slice(0, 1), engine: 'claude-sonnet-4.5' }),
      at(voicePersona({ sessionTools: tools.slice(1) }), '2026-11-30T23:59:00Z'),
      voicePersona({ clock: undefined }),
      voicePersona({ clock: undefined, sessionTools: [], engine: 'gpt-4.1' }),
      chatTurn({ engine: 'gpt-4.1' }),
    ];
    // Twice over, in both orders: whichever compile planned the prefix first, each finishes it as its own.
    for (const order of [variants, [...variants].reverse(), variants]) {
      for (const input of order) expect(JSON.stringify(memoised(input))).toBe(JSON.stringify(plain.compile(input)));
    }
    // A memo shared with a compiler that counts otherwise (the estimate) never hands it the other's counts.
    const { compile: estimated } = createCompiler({ memo: caches.compiler });
    for (const input of variants) expect(JSON.stringify(estimated(input))).toBe(JSON.stringify(compile(input)));
    for (const input of variants) expect(JSON.stringify(memoised(input))).toBe(JSON.stringify(plain.compile(input)));
    const [base, engine, toolless] = variants.map((input) => memoised(input));
    expect(engine!.cache.routeKey).not.toBe(base!.cache.routeKey);
    expect(engine!.cache.boundaries).toEqual(base!.cache.boundaries);
    expect(toolless!.cache.toolTokens).toBe(0);
    toolless!.cache.boundaries.forEach((boundary, i) => expect(boundary.tokens).toBe(base!.cache.boundaries[i]!.tokens - base!.cache.toolTokens));
  });

  it('a new minute’s clock block, derived from the day’s template, compiles byte for byte as afresh, every minute of a day in several zones', { timeout: HEAVY_TEST_MS }, () => {
    const caches = createCaches();
    const { compile: memoised } = createCompiler({ memo: caches.compiler });
    for (const timeZone of ['UTC', 'America/Los_Angeles', 'Asia/Kathmandu']) {
      const input = { ...voicePersona(), clock: { now: new Date(0), timeZone } };
      // 2026-11-01 is a DST change day in Los Angeles: the offset, and so the template, changes within it.
      const start = Date.parse('2026-11-01T00:00:00Z');
      for (let minute = 0; minute < 26 * 60; minute += 1) {
        const iso = new Date(start + minute * 60_000).toISOString();
        const derived = memoised(at(input, iso));
        const afresh = compile(at(input, iso));
        expect(derived.systemPrompt).toBe(afresh.systemPrompt);
        const clock = derived.blocks.findIndex((block) => block.kind === 'clock');
        expect(derived.blocks[clock]).toEqual(afresh.blocks[clock]);
        expect(derived.promptSha256).toBe(afresh.promptSha256);
        if (minute % 97 === 0) expect(derived).toEqual(afresh);
      }
    }
  });
});
