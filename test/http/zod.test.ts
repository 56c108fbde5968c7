import { describe, expect, it } from 'vitest';
import { buildTestApp } from '../helpers/app.js';
import { scribeTurn } from '../helpers/turns.js';

const ESC = '\u001b';

describe('a 400 is bounded whatever the caller sent', () => {
  it('lists at most 20 unknown keys of 20,000, each clamped and escaped, and says how many more', async () => {
    const { app } = await buildTestApp({ BODY_LIMIT: String(1024 * 1024) });
    const body: Record<string, unknown> = { ...scribeTurn() };
    // One 250 KB key that carries an OSC title and a CSI sequence, then 20,000 short ones.
    const hostile = `${ESC}]0;owned${'\u0007'}${ESC}[2J${'k'.repeat(250_000)}`;
    body[hostile] = 1;
    for (let i = 0; i < 20_000; i++) body[`extra${i}`] = i;
    const response = await app.inject({ method: 'POST', url: '/compile', payload: body });
    expect(response.statusCode).toBe(400);
    expect(response.body.length).toBeLessThan(16 * 1024);
    const problem = response.json() as { detail: string; errors: Array<{ path: string; message: string }> };
    expect(problem.errors.length).toBeLessThanOrEqual(20);
    const text = JSON.stringify(problem);
    // No control character survives decoding: each is written out as an escape a reader sees.
    expect(/[\u0000-\u001f\u007f-\u009f]/.test(`${problem.detail}${problem.errors.map((e) => e.path + e.message).join('')}`)).toBe(false);
    expect(text).toContain('\\\\u001b]0;owned');
    // 20,001 unknown keys: the hostile one clamped, then 19 more named, then the count of the rest.
    expect(problem.errors).toHaveLength(1);
    expect(problem.errors[0]!.message).toMatch(/^Unrecognized keys: "\\u001b\]0;owned\\u0007\\u001b\[2Jk+…", "extra0", .*"extra18" and 19,981 more$/);
    expect(problem.detail).toBe(`/body: ${problem.errors[0]!.message}`);
  });

  it('lists at most 20 of many invalid fields and says how many there were', async () => {
    const { app } = await buildTestApp({ BODY_LIMIT: String(1024 * 1024) });
    const response = await app.inject({ method: 'POST', url: '/compile', payload: { ...scribeTurn(), capabilities: Array.from({ length: 64 }, () => ({})) } });
    expect(response.statusCode).toBe(400);
    const problem = response.json() as { detail: string; errors: unknown[] };
    expect(problem.errors.length).toBeLessThanOrEqual(20);
    expect(problem.detail).toMatch(/^128 fields are invalid \(the first 20 are listed\); the first is \/body\/capabilities\/0\/id: /);
  });

  it('clamps and escapes one long unknown key', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject({ method: 'POST', url: '/compile', payload: { ...scribeTurn(), [`${ESC}[31m${'x'.repeat(5_000)}`]: true } });
    expect(response.statusCode).toBe(400);
    expect(response.body.length).toBeLessThan(2_048);
    const problem = response.json() as { detail: string };
    expect(problem.detail).not.toContain(ESC);
    expect(problem.detail).toMatch(/^\/body: Unrecognized key: "\\u001b\[31mx{20,}…"$/);
  });
});
