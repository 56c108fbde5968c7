import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_BRAIN } from '../../../src/config.js';
import { EMOTION_WORDS } from '../../../src/core/signals/lexicon.js';
import {
  dailyFileDate,
  emotionWords,
  pickEmotionLines,
  planDailyMemory,
  recurringThemes,
  soulCore,
  todayAndYesterdayFiles,
} from '../../../src/core/signals/memory.js';

describe('emotionWords', () => {
  it.each([
    ['Spent two hours on the cache invalidation bug.', 'cache is not ache'],
    ['The presentation for Monday is still rough.', 'presentation is not present'],
    ['The heartbeat monitor flapped twice.', 'heartbeat is not heart'],
    ['Discalmed the sadistic madness of the lovely fearless Hopewell.', 'no prefix or suffix matches'],
    ['Missive from the alivestock co-op; numbers are in.', 'missive is not miss, numbers is not numb'],
  ])('finds nothing in %j (%s)', (line) => {
    expect(emotionWords(line)).toEqual([]);
  });

  it('matches whole words in any case and counts each word once', () => {
    expect(emotionWords('Excited and a little NERVOUS, nervous again.')).toEqual(['excited', 'nervous']);
    expect(emotionWords('my back aches; the ache is back')).toEqual(['ache']);
    expect(emotionWords("I'm proud of Sam's garden")).toEqual(['proud']);
  });

  // The contract: "the filter holds every word the contract names ... with their inflections".
  it.each([
    ['feel', ['feel', 'feels', 'feeling', 'feelings', 'felt']],
    ['heart', ['heart', 'hearts']],
    ['lonely', ['lonely', 'lonelier', 'loneliness']],
    ['joy', ['joy', 'joys', 'joyful']],
    ['grief', ['grief', 'grieve', 'grieves', 'grieved', 'grieving']],
    ['anger', ['anger', 'angry', 'angered']],
    ['fear', ['fear', 'fears', 'feared', 'fearing', 'fearful']],
    ['hope', ['hope', 'hopes', 'hoped', 'hoping', 'hopeful']],
    ['ache', ['ache', 'aches', 'ached', 'aching']],
    ['miss', ['miss', 'misses', 'missed', 'missing']],
    ['alive', ['alive']],
    ['numb', ['numb', 'numbness', 'numbed']],
  ])('holds the contract word %s with its inflections, each counted as the one lemma', (lemma, forms) => {
    for (const form of forms) {
      expect(EMOTION_WORDS.has(form), form).toBe(true);
      expect(emotionWords(`Today I ${form.toUpperCase()} a lot.`), form).toEqual([lemma]);
    }
  });

  it('regression: "I feel stretched thin" is an emotion line though feel is a theme stop-word', () => {
    expect(emotionWords('I feel stretched thin')).toEqual(['feel']);
    const picked = pickEmotionLines([{ date: '2026-11-30', text: '- Shipped the release.\n- I feel stretched thin\n' }]);
    expect(picked.map((line) => line.text)).toEqual(['I feel stretched thin']);
    expect(recurringThemes([{ date: '2026-11-29', text: 'I feel it.' }, { date: '2026-11-30', text: 'I feel it.' }])).not.toContain('feel');
  });

  it('holds only lowercase single words and no names', () => {
    for (const word of EMOTION_WORDS) expect(word).toMatch(/^[a-z]+$/);
    for (const name of ['alex', 'sam', 'priya', 'jordan']) expect(EMOTION_WORDS.has(name)).toBe(false);
  });
});

describe('planDailyMemory', () => {
  const listing = ['2026-11-28.md', 'heartbeat-state.json', '2026-11-30.md', '2026-12-01.md', '2026-11-29.md', '2026-02-30.md', 'notes.md', '2026-11-20.md', '2026-11-30.md'];

  it('picks dated files on or before today, newest first, each once', () => {
    const plan = planDailyMemory(listing, '2026-11-30');
    expect(plan.files).toEqual(['2026-11-30.md', '2026-11-29.md', '2026-11-28.md']);
    expect(plan.emotionFiles).toEqual(['2026-11-30.md', '2026-11-29.md']);
    expect(plan.themeFiles).toEqual(['2026-11-30.md', '2026-11-29.md', '2026-11-28.md']);
    expect(new Set(plan.files).size).toBe(plan.files.length);
    for (const name of [...plan.emotionFiles, ...plan.themeFiles]) expect(plan.files).toContain(name);
  });

  it('is independent of listing order and uses older files when recent days are missing', () => {
    expect(planDailyMemory([...listing].reverse(), '2026-11-30')).toEqual(planDailyMemory(listing, '2026-11-30'));
    expect(planDailyMemory(['2026-11-01.md', '2026-10-15.md'], '2026-11-30').emotionFiles).toEqual(['2026-11-01.md', '2026-10-15.md']);
  });

  it('moves with "today" in the operator zone: the day before excludes today\'s file', () => {
    expect(planDailyMemory(listing, '2026-11-29').files).toEqual(['2026-11-29.md', '2026-11-28.md', '2026-11-20.md']);
    expect(planDailyMemory([], '2026-11-30')).toEqual({ files: [], emotionFiles: [], themeFiles: [] });
  });

  it('names today and yesterday, and reads dates from names', () => {
    expect(todayAndYesterdayFiles('2026-03-01')).toEqual(['2026-03-01.md', '2026-02-28.md']);
    expect(dailyFileDate('2026-11-30.md')).toBe('2026-11-30');
    expect(dailyFileDate('2026-11-31.md')).toBeUndefined();
  });
});

describe('pickEmotionLines', () => {
  const files = [
    { date: '2026-11-29', text: '# 2026-11-29\n- Calm walk.\n- Worried and anxious and tired.\n- Fixed the cache.' },
    { date: '2026-11-30', text: '# 2026-11-30\n- Excited and nervous.\n- Grateful.\n## Evening\n```\n- sad in code\n```' },
  ];

  it('ranks lines with more emotion words higher, then newer files, then file order', () => {
    expect(pickEmotionLines(files).map((line) => [line.date, line.text, line.score])).toEqual([
      ['2026-11-29', 'Worried and anxious and tired.', 3],
      ['2026-11-30', 'Excited and nervous.', 2],
      ['2026-11-30', 'Grateful.', 1],
      ['2026-11-29', 'Calm walk.', 1],
    ]);
  });

  it('shows a line repeated across days once, at its newest place', () => {
    const repeated = [
      { date: '2026-11-29', text: '- Worried about the lease.' },
      { date: '2026-11-30', text: '- worried about the  lease.\n- Worried about the lease.' },
    ];
    expect(pickEmotionLines(repeated).map((line) => [line.date, line.text])).toEqual([['2026-11-30', 'worried about the  lease.']]);
  });

  it('is independent of the order files are given in and honours max', () => {
    expect(pickEmotionLines([...files].reverse())).toEqual(pickEmotionLines(files));
    expect(pickEmotionLines(files, { max: 1 })).toHaveLength(1);
  });

  it('returns nothing for empty, emotionless or binary files', () => {
    expect(pickEmotionLines([{ date: '2026-11-30', text: '' }])).toEqual([]);
    expect(pickEmotionLines([{ date: '2026-11-30', text: '- the cache and the heartbeat and the presentation' }])).toEqual([]);
    expect(pickEmotionLines([{ date: '2026-11-30', text: '\u0000\u0001\ufffd' }])).toEqual([]);
  });
});

describe('soulCore', () => {
  it('keeps whole paragraphs while they fit, reflowing wrapped lines and dropping the title', () => {
    const text = '# Soul\n\nI like slow\nmornings.\n\n## Values\n\n- Honesty.\n- Kindness.';
    expect(soulCore(text).text).toBe('I like slow mornings.\nValues:\n- Honesty.\n- Kindness.');
  });

  it('cuts the paragraph that does not fit at its last sentence end within the limit', () => {
    const text = 'First sentence here. Second sentence is longer than the rest. Third.';
    expect(soulCore(text, 40).text).toBe('First sentence here.');
  });

  it('clamps a first paragraph without sentence ends, and never exceeds the cap', () => {
    const core = soulCore('word '.repeat(500), 600).text;
    expect(core.length).toBeLessThanOrEqual(600);
    expect(core.endsWith('…')).toBe(true);
  });

  it('scrubs PII before cutting and reports the redactions it kept', () => {
    const core = soulCore('Call me on +44 20 7946 0958 or write to me@example.org. Later sentence that will not fit in.', 60);
    expect(core.text).toBe('Call me on [phone] or write to [email].');
    expect(core.redactions).toEqual({ email: 1, phone: 1 });
  });

  it('caps the example SOUL at 600 characters, ending at a sentence', () => {
    const core = soulCore(readFileSync(`${EXAMPLE_BRAIN}/SOUL.md`, 'utf8')).text;
    expect(core.length).toBeLessThanOrEqual(600);
    expect(core.startsWith('I am happiest when I am building something slowly')).toBe(true);
    expect(core).toMatch(/[.!?]$/);
  });

  it('degrades to empty text on empty input and stays bounded on 5 MB', () => {
    expect(soulCore('').text).toBe('');
    expect(soulCore(`${'a '.repeat(2_500_000)}`).text.length).toBeLessThanOrEqual(600);
  });
});

describe('recurringThemes', () => {
  it('keeps words and phrases that recur across files, not within one', () => {
    const files = [
      { date: '2026-11-28', text: '- The studio lease is on my mind. Garden, garden, garden.' },
      { date: '2026-11-29', text: '- Studio lease again; Sam called about the plans.' },
      { date: '2026-11-30', text: '- Signed nothing on the studio lease. Sam laughed.' },
    ];
    expect(recurringThemes(files)).toEqual(['studio lease', 'sam']);
  });

  it('never turns stop-words, numbers, URLs, emails or phone numbers into themes', () => {
    const files = [
      { date: '2026-11-29', text: '- Mail jordan.lee@example.org, see https://example.com/orders/4155550100, call +44 20 7946 0958, 2026 was the year' },
      { date: '2026-11-30', text: '- Mail jordan.lee@example.org, see https://example.com/orders/4155550100, call +44 20 7946 0958, 2026 was the year' },
    ];
    const themes = recurringThemes(files);
    expect(themes.join(' ')).not.toMatch(/jordan|example|https|orders|\d|email|phone|the|was/);
    expect(themes).toEqual(['call', 'mail']);
  });

  it('is deterministic and independent of file order', () => {
    const files = readdirSync(`${EXAMPLE_BRAIN}/memory`)
      .filter((name) => name.endsWith('.md'))
      .map((name) => ({ date: name.slice(0, 10), text: readFileSync(`${EXAMPLE_BRAIN}/memory/${name}`, 'utf8') }));
    const themes = recurringThemes(files);
    expect(recurringThemes([...files].reverse())).toEqual(themes);
    expect(themes[0]).toBe('studio lease');
    expect(themes).toContain('garden');
  });

  it('returns nothing for a single file, empty files or binary junk', () => {
    expect(recurringThemes([{ date: '2026-11-30', text: 'lease lease lease' }])).toEqual([]);
    expect(recurringThemes([{ date: '2026-11-29', text: '' }, { date: '2026-11-30', text: '\u0000\ufffd' }])).toEqual([]);
  });
});
