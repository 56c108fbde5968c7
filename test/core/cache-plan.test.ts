import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CACHE_SCHEMA_VERSION, compile, createCompiler, PROVIDER_MINIMUM_TOKENS, sha256Hex, type CompiledContext } from '../../src/core/index.js';
import { createCaches } from '../../src/caches.js';
import { PrefixHasher } from '../../src/core/prefix-hasher.js';
import { chatTurn, SCRIBE_IDENTITY } from './golden/cases.js';

function boundary(compiled: CompiledContext, cacheClass: string) {
  return compiled.cache.boundaries.find((entry) => entry.class === cacheClass);
}

const channel = (id: string, text: string) => ({ source: `channels/${id}/purpose.md`, text, brainDerived: true });

describe('cache plan', () => {
  it('places one boundary per cache class after its last block, hashing the exact prefix', () => {
    const compiled = compile(chatTurn());
    expect(compiled.cache.boundaries.map((entry) => [entry.class, entry.afterBlock])).toEqual([
      ['worker-stable', 'capabilities'],
      ['channel-stable', 'purpose'],
      ['surface-stable', 'runtime-scope'],
      ['volatile', 'clock'],
    ]);
    for (const entry of compiled.cache.boundaries) {
      expect(entry.prefixSha256).toBe(sha256Hex(compiled.systemPrompt.slice(0, entry.prefixChars)));
      expect(compiled.blocks[entry.blockIndex]!.kind).toBe(entry.afterBlock);
      expect(entry.belowMinimum).toBe(entry.approxTokens < PROVIDER_MINIMUM_TOKENS);
    }
    expect(compiled.cache.boundaries.at(-1)!.prefixChars).toBe(compiled.systemPrompt.length);
    expect(compiled.cache.boundaries.at(-1)!.prefixSha256).toBe(compiled.promptSha256);
    expect(compiled.cache.schemaVersion).toBe(CACHE_SCHEMA_VERSION);
    expect(compiled.cache.routeKey).toMatch(/^cc\d+-[0-9a-f]{32}$/);
  });

  it('two channels of one worker share the worker-stable boundary and route key, not later ones', () => {
    const general = compile(chatTurn({ purpose: channel('general', 'General conversation.') }));
    const alerts = compile(chatTurn({ purpose: channel('ops-alerts', 'Operational alerts; one sentence each.') }));
    expect(boundary(alerts, 'worker-stable')).toEqual(boundary(general, 'worker-stable'));
    expect(alerts.cache.routeKey).toBe(general.cache.routeKey);
    expect(boundary(alerts, 'channel-stable')!.prefixSha256).not.toBe(boundary(general, 'channel-stable')!.prefixSha256);
    expect(boundary(alerts, 'surface-stable')!.prefixSha256).not.toBe(boundary(general, 'surface-stable')!.prefixSha256);
    expect(alerts.promptSha256).not.toBe(general.promptSha256);
  });

  it('a changed identity rotates every boundary and the route key', () => {
    const before = compile(chatTurn());
    const after = compile(chatTurn({ identity: { source: 'workers/scribe/identity.md', text: `${SCRIBE_IDENTITY}\nOne more rule.`, brainDerived: true } }));
    expect(after.cache.routeKey).not.toBe(before.cache.routeKey);
    before.cache.boundaries.forEach((entry, i) => expect(after.cache.boundaries[i]!.prefixSha256).not.toBe(entry.prefixSha256));
  });

  it('volatile inputs (clock, message, notes) leave every stable boundary and the route key alone', () => {
    const first = compile(chatTurn());
    const later = compile(
      chatTurn({
        clock: { now: new Date('2026-12-01T08:00:00Z'), timeZone: 'Europe/London' },
        message: { source: 'request:message', text: 'A different turn.' },
        memory: [],
      }),
    );
    expect(later.cache.routeKey).toBe(first.cache.routeKey);
    for (const cacheClass of ['worker-stable', 'channel-stable', 'surface-stable']) expect(boundary(later, cacheClass)).toEqual(boundary(first, cacheClass));
    expect(boundary(later, 'volatile')!.prefixSha256).not.toBe(boundary(first, 'volatile')!.prefixSha256);
  });

  it('a surface change keeps the channel-stable prefix but not the surface-stable one', () => {
    const chat = compile(chatTurn());
    const direct = compile(chatTurn({ surface: 'direct' }));
    expect(boundary(direct, 'channel-stable')).toEqual(boundary(chat, 'channel-stable'));
    expect(boundary(direct, 'surface-stable')!.prefixSha256).not.toBe(boundary(chat, 'surface-stable')!.prefixSha256);
  });

  it('flags a prefix the providers would not cache, and clears the flag once it is long enough', () => {
    const short = compile(chatTurn());
    expect(boundary(short, 'worker-stable')!.belowMinimum).toBe(true);
    const long = compile(chatTurn({ identity: { source: 'workers/scribe/identity.md', text: 'Write plainly. '.repeat(400), brainDerived: true } }));
    expect(boundary(long, 'worker-stable')!.approxTokens).toBeGreaterThanOrEqual(PROVIDER_MINIMUM_TOKENS);
    expect(boundary(long, 'worker-stable')!.belowMinimum).toBe(false);
  });

  it('is judged per provider: OpenAI caches prefixes from 1,024 tokens, Gemini Live caches nothing, and no hash or count moves', () => {
    const openai = compile(chatTurn());
    expect(openai.cache).toMatchObject({ provider: 'openai', caching: 'prefix', minimumTokens: PROVIDER_MINIMUM_TOKENS });
    const gemini = compile(chatTurn({ provider: 'gemini' }));
    expect(gemini.cache).toMatchObject({ provider: 'gemini', caching: 'none', minimumTokens: null });
    expect(gemini.cache.boundaries.map((entry) => entry.belowMinimum)).toEqual(gemini.cache.boundaries.map(() => null));
    const { belowMinimum: _openai, ...sameOpenai } = boundary(openai, 'worker-stable')!;
    const { belowMinimum: _gemini, ...sameGemini } = boundary(gemini, 'worker-stable')!;
    expect(sameGemini).toEqual(sameOpenai);
    expect([gemini.promptSha256, gemini.cache.routeKey, gemini.systemPrompt]).toEqual([openai.promptSha256, openai.cache.routeKey, openai.systemPrompt]);
  });

  it('regression: a stable prefix planned for one provider is judged again for the next compile’s (one memo, both providers)', () => {
    const compiler = createCompiler({ memo: createCaches().compiler });
    const first = compiler.compile(chatTurn({ provider: 'gemini' }));
    const second = compiler.compile(chatTurn());
    const third = compiler.compile(chatTurn({ provider: 'gemini' }));
    expect(boundary(first, 'worker-stable')!.belowMinimum).toBeNull();
    expect(boundary(second, 'worker-stable')!.belowMinimum).toBe(true);
    expect(second.cache.provider).toBe('openai');
    expect(third.cache).toEqual(first.cache);
  });
});

describe('PrefixHasher', () => {
  it('equals hashing each prefix directly, memoised or not', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string({ unit: 'binary', maxLength: 60 }), fc.boolean()), { maxLength: 8 }), (parts) => {
        // The second round finds every keyed prefix in the memo the first one filled.
        const memo = createCaches().compiler.prefixes;
        for (let round = 0; round < 3; round++) {
          const hasher = new PrefixHasher(round === 2 ? undefined : memo);
          let prefix = '';
          for (const [segment, stable] of parts) {
            hasher.push(segment, stable ? sha256Hex(segment) : undefined);
            prefix += segment;
            expect(hasher.digest()).toBe(sha256Hex(prefix));
          }
        }
      }),
    );
  });
});
