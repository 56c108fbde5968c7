import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { addCounts, clampRedacted, REDACTION_PLACEHOLDER, scrubPii } from '../../src/core/pii.js';
import { lookAlikes, positives } from './fixtures/pii-corpus.js';
import { HEAVY_TEST_MS } from '../helpers/bounds.js';

/** Digits left in a positive after scrubbing, ignoring digits the template itself holds. */
function leftoverDigits(sample: { text: string; pii: string }, scrubbed: string): string {
  const template = sample.text.replace(sample.pii, '');
  const allowed = new Set(template.match(/\d+/g) ?? []);
  return (scrubbed.match(/\d+/g) ?? []).filter((run) => !allowed.has(run)).join(' ');
}

describe('scrubPii corpus', () => {
  it.each(positives)('redacts the $kind in %#: $pii', (sample) => {
    const result = scrubPii(sample.text);
    expect(result.text).not.toContain(sample.pii);
    expect(result.text).toContain(REDACTION_PLACEHOLDER[sample.kind]);
    expect(result.counts[sample.kind]).toBe(1);
    expect(leftoverDigits(sample, result.text)).toBe('');
    if (sample.kind === 'email') expect(result.text).not.toMatch(/@/);
  });

  it.each(lookAlikes)('leaves look-alike %# unchanged: %s', (text) => {
    const result = scrubPii(text);
    expect(result.text).toBe(text);
    expect(result.counts).toEqual({ email: 0, phone: 0 });
  });

  it('reaches full recall with no false positives on the corpus', () => {
    const recalled = positives.filter((sample) => !scrubPii(sample.text).text.includes(sample.pii)).length;
    const falsePositives = lookAlikes.filter((text) => scrubPii(text).text !== text).length;
    expect({ recall: recalled / positives.length, falsePositiveRate: falsePositives / lookAlikes.length }).toEqual({
      recall: 1,
      falsePositiveRate: 0,
    });
    expect(positives.length).toBeGreaterThanOrEqual(45);
    expect(lookAlikes.length).toBeGreaterThanOrEqual(30);
  });
});

describe('scrubPii on the example brain lines', () => {
  it('redacts the calendar phone, the inbox email and phone, and spares the invoice, order and URL', () => {
    const text = [
      '- 15:00 1:1 with Jordan — call (415) 555-0100 if the link fails',
      '- [unread] Jordan Lee: Can we move our 1:1 to Thursday? Reach me at jordan.lee@example.org',
      '- [unread] Priya: The lease draft is in your inbox, call 415.555.0100 with questions.',
      '- [unread] Northwind billing: Invoice INV-2026-0042 is ready.',
      '- Sam called from +44 20 7946 0958 while I was out; call back about the garden plans.',
      '- Order #48213 for the new desk shipped; tracking at https://shop.example.com/orders/9f8e7d6c5b4a39281706.',
      '- Note to self: the heartbeat monitor on the server flapped twice, version 2.14.3 fixes it.',
      '- Follow-up: Alex presents the roadmap on 2026-11-30 at 11:00.',
    ].join('\n');
    const result = scrubPii(text);
    expect(result.counts).toEqual({ email: 1, phone: 3 });
    expect(result.text).toContain('INV-2026-0042');
    expect(result.text).toContain('#48213');
    expect(result.text).toContain('https://shop.example.com/orders/9f8e7d6c5b4a39281706');
    expect(result.text).toContain('2.14.3');
    expect(result.text).toContain('2026-11-30 at 11:00');
    expect(result.text).toContain('15:00 1:1 with Jordan');
    expect(result.text).not.toMatch(/555|7946|jordan\.lee/);
  });
});

describe('scrubPii rules', () => {
  it('needs a phone word for short local numbers and for digits written without separators', () => {
    expect(scrubPii('text me at 555-0100').counts.phone).toBe(1);
    expect(scrubPii('extension 555-0100 in room 4').counts.phone).toBe(0);
    expect(scrubPii('Phone: 4155550100').counts.phone).toBe(1);
    expect(scrubPii('batch 4155550100 done').counts.phone).toBe(0);
  });

  it('lets an id word right before a number win over the phone shape', () => {
    for (const text of ['ticket 415-555-0100', 'Order no. 415-555-0100', 'issue number 415 555 0100', 'PR #415-555-0100']) {
      expect(scrubPii(text).text).toBe(text);
    }
    // ...but only when it touches the number.
    expect(scrubPii('ticket 12 is done, call 415-555-0100').counts.phone).toBe(1);
  });

  it('finds a phone next to a date in one run of numbers', () => {
    expect(scrubPii('2026-11-30 415-555-0100').text).toBe('2026-11-30 [phone]');
    expect(scrubPii('call 2026-11-30 at 14:00').counts.phone).toBe(0);
  });

  it('redacts emails inside URLs but never phone-shaped ids inside URLs', () => {
    expect(scrubPii('https://example.com/u?who=alex@example.com').text).toBe('https://example.com/u?who=[email]');
    const url = 'https://example.com/items/4155550100?ref=+14155550100';
    expect(scrubPii(url).text).toBe(url);
  });

  it('never joins digit groups across a line break', () => {
    const text = 'call 415\n555 0100';
    expect(scrubPii(text).text.split('\n')).toHaveLength(2);
    expect(scrubPii('Lines:\n415\n555\n0100').text).toBe('Lines:\n415\n555\n0100');
  });

  it('leaves an scp-style git remote alone but redacts the same address in prose', () => {
    expect(scrubPii('git@github.com:org/repo.git').counts.email).toBe(0);
    expect(scrubPii('write to git@github.com: it bounces').counts.email).toBe(1);
  });

  it('returns the same object shape for empty text', () => {
    expect(scrubPii('')).toEqual({ text: '', counts: { email: 0, phone: 0 } });
  });
});

const fragment = fc.oneof(
  fc.constantFrom(
    ' ', '\n', '-', '.', '(', ')', '+', ':', '/', '#', '@', ',', 'call ', 'ticket ', 'tel:', 'https://x.io/', ' at ',
    '[email]', '[phone]', 'a@b.co', 'jordan.lee@example.org', '+44 20 7946 0958', '(415) 555-0100', '2026-11-30', '14:00',
  ),
  fc.stringMatching(/^\d{1,5}$/),
  fc.stringMatching(/^[a-z]{1,6}$/),
);
const textOfFragments = fc.array(fragment, { maxLength: 40 }).map((parts) => parts.join(''));

describe('scrubPii properties', () => {
  it('is idempotent: scrubbing its own output changes nothing and counts nothing', () => {
    fc.assert(
      fc.property(textOfFragments, (text) => {
        const once = scrubPii(text);
        const twice = scrubPii(once.text);
        expect(twice.text).toBe(once.text);
        expect(twice.counts).toEqual({ email: 0, phone: 0 });
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps every line break and counts exactly the placeholders it adds', () => {
    fc.assert(
      fc.property(textOfFragments, (text) => {
        const result = scrubPii(text);
        const count = (haystack: string, needle: string) => haystack.split(needle).length - 1;
        expect(count(result.text, '\n')).toBe(count(text, '\n'));
        expect(count(result.text, '[email]') - count(text, '[email]')).toBe(result.counts.email);
        expect(count(result.text, '[phone]') - count(text, '[phone]')).toBe(result.counts.phone);
      }),
      { numRuns: 2000 },
    );
  });

  it('never throws and returns strings on arbitrary unicode', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 300 }), (text) => {
        expect(typeof scrubPii(text).text).toBe('string');
      }),
      { numRuns: 1000 },
    );
  });
});

describe('scrubPii on large adversarial input', () => {
  // A hang guard, not a benchmark: every pattern is linear, so each case finishes well inside the
  // timeout. 1 MB is four times the largest brain file read by default (256 KB), and a pattern
  // quadratic in it would take some 10^12 steps; the complexity test measures the growth itself.
  const size = 1024 * 1024;
  const shapes = ['1-', '1.', '1 ', '12 -3 ', '+1 ', '(1)', 'a@', 'a.b@c.', 'a [at] b [dot] ', 'call 415 ', '1,2', '1@1.'];
  it.each(shapes)('scrubs 1 MB of %j in bounded time', { timeout: HEAVY_TEST_MS }, (unit) => {
    const text = `${unit.repeat(Math.ceil(size / unit.length)).slice(0, size)}x`;
    const result = scrubPii(text);
    expect(result.text.length).toBeGreaterThan(0);
  });
});

describe('clampRedacted', () => {
  it('never leaves half a placeholder at the cut', () => {
    const text = 'call [phone] or write to [email] today';
    for (let max = 1; max <= text.length + 2; max++) {
      const clamped = clampRedacted(text, max);
      expect(clamped.length).toBeLessThanOrEqual(max);
      const withoutWhole = clamped.replace(/\[(?:email|phone)\]/g, '');
      expect(withoutWhole).not.toMatch(/\[[a-z]*…?$/);
    }
  });
});

describe('addCounts', () => {
  it('adds per kind into the first argument', () => {
    const total = { email: 1, phone: 2 };
    expect(addCounts(total, { email: 3, phone: 4 })).toBe(total);
    expect(total).toEqual({ email: 4, phone: 6 });
  });
});
