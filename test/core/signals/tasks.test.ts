import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EXAMPLE_BRAIN } from '../../../src/config.js';
import { headingPriority, parseTasks } from '../../../src/core/signals/tasks.js';

const titles = (text: string) => parseTasks(text).tasks.map((task) => task.title);

describe('parseTasks formats', () => {
  it('counts open "- [ ]" items and excludes "[x]" and "[X]"', () => {
    const list = parseTasks('- [ ] one\n- [x] done\n- [X] also done\n* [ ] two\n+ [ ] three\n1. [ ] four\n2) [ ] five');
    expect(list.openCount).toBe(5);
    expect(list.doneCount).toBe(2);
    expect(list.tasks.map((task) => task.title)).toEqual(['one', 'two', 'three', 'four', 'five']);
  });

  it('treats other boxes and plain bullets as neither open nor done', () => {
    const list = parseTasks('- [-] cancelled\n- [/] half\n- not a task\n- [] empty box\n-[ ] no space');
    expect(list).toEqual({ openCount: 0, doneCount: 0, tasks: [] });
  });

  it('takes the bold part as the title and the rest as the note', () => {
    const [task] = parseTasks('- [ ] **Answer the landlord** — deadline Wednesday').tasks;
    expect(task).toMatchObject({ title: 'Answer the landlord', note: 'deadline Wednesday' });
    expect(parseTasks('- [ ] __Pay rent__: by Friday').tasks[0]).toMatchObject({ title: 'Pay rent', note: 'by Friday' });
    expect(parseTasks('- [ ] Call **Sam** back').tasks[0]).toMatchObject({ title: 'Call **Sam** back', note: undefined });
  });

  it('reads P0..P3, !urgent/!high/!medium/!low and (priority: …) markers and removes them from the title', () => {
    const list = parseTasks(
      ['- [ ] low one !low', '- [ ] plain', '- [ ] paren (priority: high)', '- [ ] P0 first', '- [ ] tagged P3', '- [ ] bang !urgent', '- [ ] (prio: medium) mid'].join('\n'),
    );
    expect(list.tasks.map((task) => [task.priority, task.title, task.prioritySource])).toEqual([
      [0, 'first', 'marker'],
      [0, 'bang', 'marker'],
      [1, 'paren', 'marker'],
      [2, 'plain', 'default'],
      [2, 'mid', 'marker'],
      [3, 'low one', 'marker'],
      [3, 'tagged', 'marker'],
    ]);
  });

  it('lets the most urgent of several markers win', () => {
    expect(parseTasks('- [ ] both P3 and !high').tasks[0]?.priority).toBe(1);
  });

  it('does not read markers inside words or ids', () => {
    const list = parseTasks('- [ ] play MP3 files\n- [ ] ship hotfix-P1x\n- [ ] note!high');
    expect(list.tasks.map((task) => task.priority)).toEqual([2, 2, 2]);
  });

  it('takes priority from the nearest heading that implies one, with line markers overriding', () => {
    const text = [
      '## P0 — Urgent',
      '- [ ] urgent one',
      '### Details',
      '- [ ] still urgent',
      '## Today',
      '- [ ] today one',
      '- [ ] today but marked !low',
      '## Later',
      '- [ ] later one',
      '## Notes',
      '- [ ] no priority heading',
    ].join('\n');
    expect(parseTasks(text).tasks.map((task) => [task.title, task.priority])).toEqual([
      ['urgent one', 0],
      ['still urgent', 0],
      ['today one', 1],
      ['no priority heading', 2],
      ['today but marked', 3],
      ['later one', 3],
    ]);
  });

  it('keeps file order among equal priorities', () => {
    const text = Array.from({ length: 50 }, (_unused, index) => `- [ ] task ${index}${index % 7 === 0 ? ' P1' : ''}`).join('\n');
    const tasks = parseTasks(text).tasks;
    const p1 = tasks.filter((task) => task.priority === 1).map((task) => task.line);
    const p2 = tasks.filter((task) => task.priority === 2).map((task) => task.line);
    expect(p1).toEqual([...p1].sort((a, b) => a - b));
    expect(p2).toEqual([...p2].sort((a, b) => a - b));
    expect(tasks.slice(0, p1.length).every((task) => task.priority === 1)).toBe(true);
  });

  it('strips HTML comments, including multi-line ones, and keeps line numbers', () => {
    const list = parseTasks('<!--\n- [ ] hidden\n-->\n- [ ] shown <!-- id: t-12 -->');
    expect(list.tasks).toEqual([{ title: 'shown', note: undefined, priority: 2, prioritySource: 'default', line: 4 }]);
  });

  it('ignores nested bullets, horizontal rules and fenced code', () => {
    const text = ['- [ ] parent', '  - [ ] nested sub-task', '\t- [ ] tab nested', '---', '***', '```', '- [ ] in code', '```', '- [ ] after rule'].join('\n');
    expect(titles(text)).toEqual(['parent', 'after rule']);
  });

  it('makes titles single-line and clamps them', () => {
    const [task] = parseTasks(`- [ ] ${'word '.repeat(200)}\u2028x`).tasks;
    expect(task!.title.length).toBeLessThanOrEqual(300);
    expect(task!.title).not.toMatch(/[\n\r\u2028]/);
  });
});

describe('headingPriority', () => {
  it.each([
    ['P0 — Urgent', 0],
    ['Urgent', 0],
    ['Now', 0],
    ['Today', 1],
    ['High priority', 1],
    ['This week', 2],
    ['Next', 2],
    ['Later', 3],
    ['Someday / maybe', 3],
    ['Not urgent', 3],
    ['Backlog', 3],
    ['Home', undefined],
  ] as const)('%s → %s', (heading, expected) => {
    expect(headingPriority(heading)).toBe(expected);
  });
});

describe('parseTasks degradation', () => {
  it('returns an empty list for empty text, garbage and binary junk', () => {
    for (const text of ['', '\n\n', 'just prose', '\u0000\u0001\u0002\ufffd\ufffd', '- [', '- [ ]', '- [ ] P1']) {
      expect(parseTasks(text).openCount, JSON.stringify(text)).toBe(0);
    }
  });

  it('parses a 5 MB task file (including one 1 MB line) in bounded time', () => {
    const line = '- [ ] **Title** — note (priority: high) <!-- id -->\n';
    const text = line.repeat(Math.ceil((4 * 1024 * 1024) / line.length)) + `- [ ] ${'**'.repeat(250_000)}${' '.repeat(500_000)}\n## ${'# '.repeat(100_000)}x\n`;
    const list = parseTasks(text);
    expect(list.openCount).toBeGreaterThan(70_000);
    expect(list.tasks[0]).toMatchObject({ title: 'Title', priority: 1 });
  });
});

describe('parseTasks on the example brain', () => {
  it('orders by priority, not file order, and counts seven open tasks', () => {
    const list = parseTasks(readFileSync(`${EXAMPLE_BRAIN}/tasks/open.md`, 'utf8'));
    expect(list.openCount).toBe(7);
    expect(list.tasks.slice(0, 3).map((task) => [task.priority, task.title])).toEqual([
      [0, 'Answer the landlord about the studio lease'],
      [1, 'Send the roadmap slides to Jordan'],
      [1, 'Call Sam back about the garden plans'],
    ]);
    expect(list.tasks.map((task) => task.title)).not.toContain('Book the dentist appointment');
    expect(list.tasks.map((task) => task.title)).not.toContain('ask about the raised beds');
  });
});
