import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_BRAIN } from '../../../src/config.js';
import { newestMeetingFile, parseMeetingFileName, summarizeMeeting } from '../../../src/core/signals/meetings.js';

describe('newestMeetingFile', () => {
  it('picks the latest date in the name, then the greatest slug, whatever the listing order', () => {
    const names = ['2026-11-24-platform-sync.md', '2026-11-27-roadmap-review.md', '2026-11-27-budget.md', 'README.md', 'notes.txt'];
    expect(newestMeetingFile(names)).toBe('2026-11-27-roadmap-review.md');
    expect(newestMeetingFile([...names].reverse())).toBe('2026-11-27-roadmap-review.md');
  });

  it('skips impossible dates, bad slugs and (with onOrBefore) future agendas', () => {
    expect(newestMeetingFile(['2026-02-30-x.md', '2026-11-24-a.md'])).toBe('2026-11-24-a.md');
    expect(newestMeetingFile(['2026-11-24-Bad Slug.md', '2026-11-20-ok.md'])).toBe('2026-11-20-ok.md');
    expect(newestMeetingFile(['2026-12-01-agenda.md', '2026-11-24-a.md'], { onOrBefore: '2026-11-30' })).toBe('2026-11-24-a.md');
    expect(newestMeetingFile([])).toBeUndefined();
  });

  it('parses the date and slug from a name', () => {
    expect(parseMeetingFileName('2026-11-27-roadmap-review.md')).toEqual({ date: '2026-11-27', slug: 'roadmap-review' });
    expect(parseMeetingFileName('2026-11-27.md')).toBeUndefined();
  });
});

describe('summarizeMeeting', () => {
  const name = '2026-11-27-roadmap-review.md';

  it('prefers a Summary: line, with its continuation lines', () => {
    const text = '# Roadmap review — 2026-11-27\n\nIntro prose.\n\nSummary: the Q1 roadmap is approved,\nwith offline mode moved to Q2.\n\n- Attendees: Alex';
    expect(summarizeMeeting(name, text)).toEqual({
      date: '2026-11-27',
      slug: 'roadmap-review',
      title: 'Roadmap review',
      summary: 'the Q1 roadmap is approved, with offline mode moved to Q2.',
      summarySource: 'summary',
    });
  });

  it('accepts bold, list and heading forms of the summary', () => {
    expect(summarizeMeeting(name, '**Summary:** approved')?.summary).toBe('approved');
    expect(summarizeMeeting(name, '- Summary: approved')?.summary).toBe('approved');
    expect(summarizeMeeting(name, '## Summary\n\nApproved with changes.\n\n## Notes')?.summary).toBe('Approved with changes.');
    expect(summarizeMeeting(name, '## Summary\n- Approved with changes.\n- Second point')?.summary).toBe('Approved with changes.');
  });

  it('falls back to the first prose line, skipping field lines and bullets, then to nothing', () => {
    const text = '# Sync\n\nAttendees: Alex, Jordan\n- a bullet\nWe agreed to freeze the API.';
    expect(summarizeMeeting(name, text)).toMatchObject({ title: 'Sync', summary: 'We agreed to freeze the API.', summarySource: 'prose' });
    expect(summarizeMeeting(name, '- only\n- bullets')).toMatchObject({ title: 'roadmap review', summary: undefined, summarySource: 'none' });
  });

  it('keeps every field single-line and clamped; undefined for a non-meeting name', () => {
    const summary = summarizeMeeting(name, `# ${'T'.repeat(500)}\nSummary: ${'s '.repeat(400)}\u2028end`);
    expect(summary!.title.length).toBeLessThanOrEqual(240);
    expect(summary!.summary!.length).toBeLessThanOrEqual(240);
    expect(summary!.summary).not.toMatch(/[\n\u2028]/);
    expect(summarizeMeeting('notes.md', 'Summary: x')).toBeUndefined();
  });

  it('degrades on empty text, binary junk and a huge heading', () => {
    expect(summarizeMeeting(name, '')).toMatchObject({ title: 'roadmap review', summarySource: 'none' });
    expect(summarizeMeeting(name, '\u0000\u0001\ufffd')?.summarySource).toBe('prose');
    const huge = summarizeMeeting(name, `# a${' '.repeat(2_000_000)}b\n`);
    expect(huge!.title.length).toBeLessThanOrEqual(240);
  });

  it('summarises the newest example meeting', () => {
    const names = readdirSync(`${EXAMPLE_BRAIN}/meetings`);
    const newest = newestMeetingFile(names)!;
    expect(newest).toBe('2026-11-27-roadmap-review.md');
    const summary = summarizeMeeting(newest, readFileSync(`${EXAMPLE_BRAIN}/meetings/${newest}`, 'utf8'));
    expect(summary).toMatchObject({ title: 'Roadmap review', summary: 'the Q1 roadmap is approved, with the offline mode moved to Q2.' });
  });
});
