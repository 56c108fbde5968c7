import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { quoteForWarning, WARNING_QUOTE_CHARS } from '../../src/core/text.js';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';

/**
 * Issue 27: warnings quoted brain text verbatim — an unknown JSON key sent terminal escape
 * sequences through the CLI, and a 64 KB `personas/tools.json` put a 52,885-char warning into
 * every answer and trace. Every quote of brain text in a warning is now escaped (controls,
 * bidi and invisible characters as `\uXXXX`) and at most 200 chars.
 */

const NOW = '2026-11-30T17:05:00Z';
const ESC = '\u001b';
/** A warning may hold at most this much: its own words and one quote. */
const MAX_WARNING_CHARS = WARNING_QUOTE_CHARS + 100;

function expectSafe(warnings: string[]): void {
  for (const warning of warnings) {
    expect(warning.length, warning.slice(0, 300)).toBeLessThanOrEqual(MAX_WARNING_CHARS);
    expect(warning).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/);
  }
}

describe('warnings quote brain text escaped and clamped (issue 27)', () => {
  it('quoteForWarning escapes controls and bidi characters and clamps to 200 chars', () => {
    expect(quoteForWarning(`a${ESC}[31mred\u202e\n`)).toBe('a\\u001b[31mred\\u202e\\u000a');
    expect(quoteForWarning('plain text')).toBe('plain text');
    const long = quoteForWarning('k'.repeat(60_000));
    expect(long).toHaveLength(WARNING_QUOTE_CHARS);
    expect(long.endsWith('…')).toBe(true);
    expect(quoteForWarning(`${'\u202e'.repeat(500)}`).length).toBeLessThanOrEqual(WARNING_QUOTE_CHARS);
  });

  it('a 64 KB personas/tools.json with an unknown key gives a clamped warning, not a 52,885-char one', async () => {
    const brain = await copyExampleBrain();
    const key = `${ESC}[31m${'x'.repeat(60_000)}`;
    await writeFile(join(brain, 'personas/tools.json'), JSON.stringify({ [key]: 1, personas: { venus: { tools: ['search'] } } }));
    const { app } = await buildTestApp({ BRAIN_ROOT: brain });
    const body = (await app.inject(`/context/venus?now=${NOW}`)).json();
    const warning = (body.warnings as string[]).find((text) => text.startsWith('personas/tools.json is invalid'));
    expect(warning).toMatch(/^personas\/tools\.json is invalid at \/: Unrecognized key: "\\u001b\[31mxxx.*…; the default tools apply$/);
    expectSafe(body.warnings);
  });

  it('an unknown key in a worker policy.json is quoted escaped and clamped', async () => {
    const brain = await copyExampleBrain();
    await writeFile(join(brain, 'workers/scribe/policy.json'), JSON.stringify({ limitChars: 24000, [`\u202e${'y'.repeat(50_000)}`]: true }));
    const { app } = await buildTestApp({ BRAIN_ROOT: brain });
    const response = await app.inject({ method: 'POST', url: '/compile', payload: { phase: 'start', surface: 'queued-task', worker: 'scribe', task: 'x', now: NOW } });
    expect(response.statusCode).toBe(200);
    const warning = (response.json().warnings as string[]).find((text) => text.startsWith('workers/scribe/policy.json is invalid'));
    expect(warning).toContain('Unrecognized key: "\\u202eyyy');
    expectSafe(response.json().warnings);
  });

  it('a memory file whose name holds a bidi override is named escaped in the warnings', async () => {
    const brain = await copyExampleBrain();
    await mkdir(join(brain, 'workers/scribe/memory'), { recursive: true });
    await writeFile(join(brain, 'workers/scribe/memory', 'gpj.\u202enotes.md'), `## big\n${'word '.repeat(20_000)}\n`);
    const { app } = await buildTestApp({ BRAIN_ROOT: brain });
    const response = await app.inject({ method: 'POST', url: '/compile', payload: { phase: 'turn', surface: 'chat', worker: 'scribe', message: 'big', now: NOW } });
    expect(response.statusCode).toBe(200);
    const warnings = response.json().warnings as string[];
    expect(warnings).toContainEqual(expect.stringMatching(/^workers\/scribe\/memory\/gpj\.\\u202enotes\.md is 100008 bytes; kept the last/));
    expectSafe(warnings);
  });
});
