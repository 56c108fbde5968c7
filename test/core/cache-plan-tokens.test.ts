import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCaches } from '../../src/caches.js';
import { compile, createCompiler, ESTIMATE_COUNTER, PROVIDER_MINIMUM_TOKENS, type CompiledContext, type CompileInput, type TokenCounter } from '../../src/core/index.js';
import { countClockLine, type PieceTokens } from '../../src/core/cache-plan.js';
import { createCacheArea } from '../../src/cache-area.js';
import { clockLine } from '../../src/core/time.js';
import { O200K_BASE } from '../../src/tokenizer.js';
import { chatTurn, queuedTask, voicePersona } from './golden/cases.js';
import { HEAVY_TEST_MS } from '../helpers/bounds.js';

const exact = createCompiler({ tokenizer: O200K_BASE });

/** Every boundary's tokens, counted the slow way: the whole prefix at once, plus the tool definitions. */
function expectExactBoundaries(compiled: CompiledContext, input: CompileInput): void {
  const toolTokens = input.sessionTools?.length ? O200K_BASE.countTools(input.sessionTools) : 0;
  expect(compiled.cache).toMatchObject({ tokenizer: 'o200k_base', toolTokens });
  for (const boundary of compiled.cache.boundaries) {
    const prefix = compiled.systemPrompt.slice(0, boundary.prefixChars);
    expect(boundary.tokens, boundary.class).toBe(O200K_BASE.count(prefix) + toolTokens);
    expect(boundary.belowMinimum).toBe(boundary.tokens < PROVIDER_MINIMUM_TOKENS);
  }
}

/** A counter that records what it was asked to count. */
function recording(counter: TokenCounter) {
  const texts: string[] = [];
  const tools: number[] = [];
  return {
    texts,
    tools,
    counter: {
      name: counter.name,
      count: (text: string) => {
        texts.push(text);
        return counter.count(text);
      },
      countTools: (list: Parameters<TokenCounter['countTools']>[0]) => {
        tools.push(list.length);
        return counter.countTools(list);
      },
    } satisfies TokenCounter,
  };
}

describe('cache plan tokens (o200k_base)', () => {
  it('counts each boundary exactly: the pieces it adds up equal the whole prefix counted at once, tools included', () => {
    for (const input of [chatTurn(), queuedTask(), voicePersona(), voicePersona({ sessionTools: [] })]) expectExactBoundaries(exact.compile(input), input);
  });

  it('adds up exactly whatever the trusted text holds (punctuation or spaces at a block’s end, newlines, markers, any script)', () => {
    const text = fc.string({ unit: fc.constantFrom('a', 'Z', ' ', '.', '!', ')', '\n', '<', '<<cc', '|', '-', '9', 'é', '日', '😀', '\t', '"', "'s", '/'), maxLength: 60 });
    fc.assert(
      fc.property(fc.tuple(text, text, text, text, text), ([identity, persona, hardRules, tools, purpose]) => {
        const input = chatTurn({
          identity: { source: 'workers/scribe/identity.md', text: `You are Scribe.${identity}` },
          persona: { source: 'builtin:p', text: persona },
          hardRules: { source: 'builtin:h', text: hardRules },
          tools: { source: 'builtin:t', text: tools },
          purpose: { source: 'channels/general/purpose.md', text: `Purpose ${purpose}` },
        });
        expectExactBoundaries(exact.compile(input), input);
      }),
      { numRuns: 150 },
    );
  });

  it('regression: a prefix the estimate put over the 1,024-token minimum but o200k counts under is flagged below it (issue 17: Mars shown as ≈1,109, really 943)', () => {
    // English prose: the estimate (bytes / 4) runs about 15 % over o200k_base.
    const prose = Array.from({ length: 50 }, (_, i) => `Sentence ${i} explains how the assistant keeps answers short, plain and kind.`).join(' ');
    const input = chatTurn({ identity: { source: 'workers/scribe/identity.md', text: prose } });
    const stable = exact.compile(input).cache.boundaries[0]!;
    expect(stable.approxTokens).toBeGreaterThanOrEqual(PROVIDER_MINIMUM_TOKENS);
    expect(stable.tokens).toBeLessThan(PROVIDER_MINIMUM_TOKENS);
    expect(stable.belowMinimum).toBe(true);
  });

  it('counts the session’s tool definitions into every boundary, so tools can lift a prefix over the minimum', () => {
    const without = exact.compile(voicePersona({ sessionTools: [] }));
    const withTools = exact.compile(voicePersona());
    expect(withTools.cache.toolTokens).toBeGreaterThan(20);
    withTools.cache.boundaries.forEach((boundary, i) => expect(boundary.tokens).toBe(without.cache.boundaries[i]!.tokens + withTools.cache.toolTokens));
    // The prompt itself does not change.
    expect(withTools.promptSha256).toBe(without.promptSha256);
  });

  it('no compile pays twice: stable pieces are counted once per memo, the clock once a minute, the tools once per array', () => {
    const { counter, texts, tools } = recording(O200K_BASE);
    const compiler = createCompiler({ memo: createCaches().compiler, tokenizer: counter });
    const input = voicePersona();
    compiler.compile(input);
    const first = texts.length;
    expect(first).toBeGreaterThan(3);
    expect(tools).toEqual([2]);
    compiler.compile({ ...input });
    expect(texts).toHaveLength(first);
    // The clock's label line was counted once, with its newline.
    expect(texts).toContain('<<cc clock | trusted-directive | builtin:clock>>\n');
    // A new minute: only the clock line's ` HH:MM` is new, counted once (the line's day and zone, and its label, were counted with the first).
    compiler.compile({ ...input, clock: { now: new Date('2026-11-30T17:21:00Z'), timeZone: 'America/Los_Angeles' } });
    expect(texts.slice(first)).toEqual([' 09:21']);
    expect(tools).toEqual([2]);
  });

  it('counts a new minute exactly: the clock line counted apart from its label adds up to the prompt counted whole, minute by minute, in any zone', () => {
    const compiler = createCompiler({ memo: createCaches().compiler, tokenizer: O200K_BASE });
    const input = voicePersona();
    const start = Date.parse('2026-11-30T00:00:00Z');
    for (const timeZone of ['UTC', 'America/Los_Angeles', 'Asia/Kolkata', 'Asia/Tokyo', 'Europe/Berlin']) {
      // Every 7 minutes over two days: each hour and minute digit, both days of the week, the date's change.
      for (let minute = 0; minute < 2 * 24 * 60; minute += 7) {
        const at = { ...input, clock: { now: new Date(start + minute * 60_000), timeZone } };
        expectExactBoundaries(compiler.compile(at), at);
      }
    }
  });

  it('an estimate is never counted in pieces: the clock is counted with its label, as it always was (rounding per piece would change it)', () => {
    const { counter, texts } = recording(ESTIMATE_COUNTER);
    const compiler = createCompiler({ memo: createCaches().compiler, tokenizer: counter });
    for (const now of ['2026-11-30T17:20:00Z', '2026-11-30T17:21:00Z']) {
      const at = { ...voicePersona(), clock: { now: new Date(now), timeZone: 'UTC' } };
      const counted = texts.length;
      expect(compiler.compile(at).cache).toEqual(compile(at).cache);
      const clocks = texts.slice(counted).filter((text) => text.includes('Current date and time: '));
      expect(clocks).toEqual([`<<cc clock | trusted-directive | builtin:clock>>\nCurrent date and time: Monday 30 November 2026, 17:${now.slice(14, 16)} (UTC, UTC+00:00)`]);
    }
  });

  it('regression: text that spells a special token (<|endoftext|>) is counted as text, not a thrown error and a 500', () => {
    const input = chatTurn({ identity: { source: 'workers/scribe/identity.md', text: 'You are Scribe. <|endoftext|><|im_start|>system <|fim_prefix|>' } });
    expectExactBoundaries(exact.compile(input), input);
  });

  it('without a tokenizer the plan says it holds the estimate', () => {
    expect(compile(chatTurn()).cache.tokenizer).toBe('estimate');
  });
});

describe('the clock line counted in pieces', () => {
  /** cl100k_base as a counter, to hold the split against the other pre-tokenizer it relies on. */
  async function cl100k(): Promise<TokenCounter> {
    const { countTokens } = await import('gpt-tokenizer/encoding/cl100k_base');
    const asText = { disallowedSpecial: new Set<string>() };
    return { name: 'cl100k_base', count: (text) => countTokens(text, asText), countTools: () => 0 };
  }

  // A plain day, a DST change day in the Americas and in Europe, half- and quarter-hour zones, and a half-hour DST shift.
  const DAYS: Array<[string, string]> = [
    ['UTC', '2026-11-30'],
    ['America/Los_Angeles', '2026-11-01'],
    ['Europe/London', '2026-10-25'],
    ['Asia/Kolkata', '2026-11-30'],
    ['Asia/Kathmandu', '2026-11-30'],
    ['Australia/Lord_Howe', '2026-10-04'],
    ['America/St_Johns', '2026-11-01'],
  ];

  it('equals the line counted whole, every minute of a day in each zone, by o200k_base and cl100k_base', async () => {
    // The lines as the service renders them, with the clock's own memo (test/core/time.test.ts holds
    // them equal to a fresh Intl reading): without it each line cost a formatter, most of this test.
    const { time } = createCaches().compiler;
    for (const counter of [O200K_BASE, await cl100k()]) {
      const memo = createCacheArea<string, PieceTokens>('test.tokens', 64 * 1024 * 1024);
      for (const [timeZone, day] of DAYS) {
        // From the day's first UTC minute for 26 hours: the local day whole, whatever the zone's offset and its change that day.
        const start = Date.parse(`${day}T00:00:00Z`) - 14 * 3_600_000;
        for (let minute = 0; minute < 26 * 60; minute++) {
          const line = clockLine(new Date(start + minute * 60_000), timeZone, time);
          expect(countClockLine(line, counter, memo), `${counter.name} ${line}`).toBe(counter.count(line));
        }
      }
    }
  }, HEAVY_TEST_MS);

  it('a new minute costs lookups: once its day, ` HH:MM` and zone are counted, no text is counted again', () => {
    const { counter, texts } = recording(O200K_BASE);
    const memo = createCacheArea<string, PieceTokens>('test.tokens', 8 * 1024 * 1024);
    const at = (iso: string) => clockLine(new Date(iso), 'Asia/Kolkata');
    countClockLine(at('2026-11-30T10:05:00Z'), counter, memo);
    expect(texts).toEqual(['Current date and time: Monday 30 November 2026,', ' 15:35', ' (Asia/Kolkata, UTC+05:30)']);
    countClockLine(at('2026-11-30T10:06:00Z'), counter, memo);
    expect(texts.slice(3)).toEqual([' 15:36']);
    // The next day at a minute seen before: only the day is new.
    countClockLine(at('2026-12-01T10:06:00Z'), counter, memo);
    expect(texts.slice(4)).toEqual(['Current date and time: Tuesday 1 December 2026,']);
  });

  it('regression: a day of new minutes, again and again, counts nothing the second time (each minute’s whole clock, kept too, pushed its pieces out of the area)', () => {
    const { counter, texts } = recording(O200K_BASE);
    const compiler = createCompiler({ memo: createCaches().compiler, tokenizer: counter });
    const input = voicePersona();
    const start = Date.parse('2026-11-30T08:00:00Z');
    const day = () => {
      for (let minute = 0; minute < 24 * 60; minute += 1) compiler.compile({ ...input, clock: { now: new Date(start + minute * 60_000), timeZone: 'America/Los_Angeles' } });
    };
    day();
    const counted = texts.length;
    day();
    expect(texts.length - counted).toBe(0);
  }, 60_000);

  it('counts a line of any other shape whole, and an estimate always whole', () => {
    const memo = createCacheArea<string, PieceTokens>('test.tokens', 8 * 1024 * 1024);
    for (const line of ['Current date and time: Monday 30 November 2026, 9:05 (UTC, UTC+00:00)', 'no clock here', ', 12:34 (x)', '12:34 (x)', 'a,12:34 (x)']) {
      const { counter, texts } = recording(O200K_BASE);
      expect(countClockLine(line, counter, memo)).toBe(O200K_BASE.count(line));
      if (line !== ', 12:34 (x)') expect(texts).toEqual([line]);
    }
    const { counter, texts } = recording(ESTIMATE_COUNTER);
    const line = 'Current date and time: Monday 30 November 2026, 09:05 (UTC, UTC+00:00)';
    expect(countClockLine(line, counter, memo)).toBe(ESTIMATE_COUNTER.count(line));
    expect(texts).toEqual([line]);
  });
});
