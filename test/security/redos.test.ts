import { spawnSync } from 'node:child_process';
import { check, type Diagnostics } from 'recheck';
import { describe, expect, it } from 'vitest';
import { KNOWN_TOOL_NAMES, toolNamesPattern } from '../../src/core/persona/tools.js';
import { ASCII_MAP } from '../../src/core/text.js';
import { routePattern } from '../../src/http/problem.js';
import { buildTestApp } from '../helpers/app.js';
import { regexesOf, regexInventory, type FoundRegex } from '../helpers/regex-inventory.js';

/**
 * "Untrusted text never costs super-linear time", issue 27: every regular expression
 * in src/, schemas/ and routes/ (literals, `new RegExp(...)`, strings given to `match`) is
 * checked by recheck, a ReDoS checker for ECMAScript patterns. Its automaton checker is exact
 * for backtracking engines: a pattern it finds vulnerable fails. Its fuzz checker (used for
 * lookaround, back-references and large bounded repeats) measures steps within time limits,
 * so on a loaded machine it can call a linear pattern vulnerable: such a verdict is confirmed
 * in V8 itself, by running recheck's attack string at n and 8n pumps in a child process with
 * a deadline; super-linear growth or the deadline fails the test, naming file:line and the attack.
 */

/** A constructor whose pattern only running code can tell: keyed by its file and its arguments exactly as written. */
interface DynamicRow {
  file: string;
  expression: string;
  why: string;
  patterns: () => RegExp[] | Promise<RegExp[]>;
}

const DYNAMIC: DynamicRow[] = [
  {
    file: 'src/core/persona/tools.ts',
    expression: "`(?<![A-Za-z0-9_-])(${wanted.join('|')})(?![A-Za-z0-9_-])`, 'g'",
    why: 'an alternation of escaped tool names between lookarounds',
    patterns: () => [toolNamesPattern(KNOWN_TOOL_NAMES)!],
  },
  {
    file: 'src/core/text.ts',
    expression: "`[${Object.keys(ASCII_MAP).filter((key) => key.length === 1).join('').replace(/[\\]\\\\^-]/g, '\\\\$&')}]`, 'g'",
    why: 'one character class of the mapped characters: the expression itself, evaluated',
    patterns: () => [new Function('ASCII_MAP', `return new RegExp(${DYNAMIC[1]!.expression});`)(ASCII_MAP) as RegExp],
  },
  {
    file: 'src/http/problem.ts',
    expression: '`^${source}/?$`',
    why: "the path pattern of every route the app registers (the not-found handler's 405 check)",
    patterns: async () => {
      const { app } = await buildTestApp();
      try {
        return [...new Set(app.routeTable().map((route) => route.url))].map(routePattern);
      } finally {
        await app.close();
      }
    },
  },
];

interface Verdict {
  ok: boolean;
  /** What the checker said, for the failure message: `src/x.ts:12 /.../: 2nd degree polynomial; attack '...'`. */
  detail: string;
  /** A fuzz verdict that V8 did not bear out: the growth measured. */
  confirmedLinear?: number;
}

/** Attack strings from recheck's pumps: `prefix + pump × (n + bias)` for each pump, then the suffix. */
function attackAt(diagnostics: Extract<Diagnostics, { status: 'vulnerable' }>, n: number): string {
  return diagnostics.attack.pumps.map((pump) => pump.prefix + pump.pump.repeat(Math.max(0, n + pump.bias))).join('') + diagnostics.attack.suffix;
}

const V8_PROBE = `
const { source, flags, small, large } = JSON.parse(process.argv[1]);
const re = new RegExp(source, flags.includes('g') ? flags : flags + 'g');
const cpu = () => { const { user, system } = process.cpuUsage(); return user + system; };
const best = (text) => { let min = Infinity; for (let i = 0; i < 5; i++) { const t = cpu(); for (let k = 0; k < 10; k++) text.replace(re, ''); min = Math.min(min, cpu() - t); } return min; };
best(small);
process.stdout.write(JSON.stringify({ small: best(small), large: best(large) }));
`;

/** Growth of V8's CPU time (not the clock's, which a busy machine stretches) from an attack of n pumps to 8n (best of five of ten runs each), or undefined when it missed the deadline. */
function v8Growth(source: string, flags: string, diagnostics: Extract<Diagnostics, { status: 'vulnerable' }>): number | undefined {
  const pumpChars = Math.max(1, diagnostics.attack.pumps.reduce((sum, pump) => sum + pump.pump.length, 0));
  const n = Math.max(64, Math.ceil(4000 / pumpChars));
  const run = spawnSync(process.execPath, ['-e', V8_PROBE, JSON.stringify({ source, flags, small: attackAt(diagnostics, n), large: attackAt(diagnostics, 8 * n) })], {
    timeout: 20_000,
    encoding: 'utf8',
  });
  if (run.status !== 0) return undefined;
  const { small, large } = JSON.parse(run.stdout) as { small: number; large: number };
  return large / Math.max(small, 1);
}

/**
 * Linear growth from n to 8n is 8 and quadratic 64; caches and two cores shared with other
 * work make linear matching measure 20× and more here, so the bound is 48, as in
 * test/security/complexity.test.ts.
 */
const MAX_GROWTH = 48;

async function judge(at: string, source: string, flags: string): Promise<Verdict> {
  let diagnostics = await check(source, flags, { timeout: 30_000 });
  if (diagnostics.status === 'unknown' && diagnostics.error.kind === 'timeout') diagnostics = await check(source, flags, { timeout: 90_000 });
  const name = `${at} /${source}/${flags}`;
  if (diagnostics.status === 'safe') return { ok: true, detail: `${name}: ${diagnostics.complexity.summary}` };
  if (diagnostics.status === 'unknown') return { ok: false, detail: `${name}: the checker could not decide (${diagnostics.error.kind})` };
  const detail = `${name}: ${diagnostics.complexity.summary} (${diagnostics.checker}); attack ${diagnostics.attack.pattern}`;
  if (diagnostics.checker === 'automaton') return { ok: false, detail };
  const growth = v8Growth(source, flags, diagnostics);
  if (growth === undefined) return { ok: false, detail: `${detail}; V8 missed the deadline on it` };
  return growth <= MAX_GROWTH ? { ok: true, detail, confirmedLinear: growth } : { ok: false, detail: `${detail}; V8 time grew ${growth.toFixed(1)}× from n to 8n` };
}

/** Runs `work` over `items`, `width` at a time (the checker is CPU-bound; the machine has two cores). */
async function inBatches<T, R>(items: readonly T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const index = next++;
        results[index] = await work(items[index]!);
      }
    }),
  );
  return results;
}

describe('ReDoS check of every regular expression in src/, schemas/ and routes/ (issue 27)', () => {
  it('flags the patterns issue 27 found, so this check can fail', async () => {
    const known = [
      ['the live-context trailing fragment', '(?:\\s*\\S*[\\d@]\\S*)+$', 'u'],
      ["a memory note's heading", '^## +(.*?)\\s*#*\\s*$', ''],
      ["the blueprint's revision line", '^revision:[ \\t]*(.*?)[ \\t]*$', 'm'],
      ["a persona override's line ends", '[ \\t]+$', 'gm'],
    ] as const;
    for (const [what, source, flags] of known) {
      const verdict = await judge(what, source, flags);
      expect(verdict.ok, verdict.detail).toBe(false);
      expect(verdict.detail).toMatch(/attack /);
    }
    expect((await judge('a plain word', '^[a-z]+$', '')).ok).toBe(true);
  }, 120_000);

  it('extracts literals, constant constructors and string patterns, and names what it cannot evaluate', () => {
    const found = regexesOf(
      'x.ts',
      [
        "const A = '[a-z]';",
        'const B = /^x+$/gi;',
        'const C = new RegExp(`^${A}{2}$`, "u");',
        'const D = RegExp(name + "!");',
        "text.match('a.b');",
      ].join('\n'),
    );
    expect(found).toEqual([
      { at: 'x.ts:2', file: 'x.ts', kind: 'literal', source: '^x+$', flags: 'gi' },
      { at: 'x.ts:3', file: 'x.ts', kind: 'constructor', source: '^[a-z]{2}$', flags: 'u' },
      { at: 'x.ts:4', file: 'x.ts', kind: 'constructor', expression: 'name + "!"' },
      { at: 'x.ts:5', file: 'x.ts', kind: 'string-pattern', source: 'a.b', flags: '' },
    ]);
  });

  it('finds no pattern that backtracks super-linearly', async () => {
    const inventory = await regexInventory();
    expect(inventory.length).toBeGreaterThan(100);
    const dynamic = inventory.filter((found): found is FoundRegex & { expression: string } => found.expression !== undefined);
    const unlisted = dynamic.filter((found) => !DYNAMIC.some((row) => row.file === found.file && row.expression === found.expression));
    expect(unlisted.map((found) => `${found.at}: new RegExp(${found.expression}) — add a row to DYNAMIC that builds its patterns`)).toEqual([]);
    const stale = DYNAMIC.filter((row) => !dynamic.some((found) => found.file === row.file && found.expression === row.expression));
    expect(stale.map((row) => `${row.file}: no longer builds ${row.expression}`)).toEqual([]);

    const checks = new Map<string, { at: string[]; source: string; flags: string }>();
    const add = (at: string, source: string, flags: string) => {
      const key = `/${source}/${flags}`;
      const entry = checks.get(key) ?? { at: [], source, flags };
      entry.at.push(at);
      checks.set(key, entry);
    };
    for (const found of inventory) if (found.source !== undefined) add(found.at, found.source, found.flags!);
    for (const row of DYNAMIC) {
      const at = dynamic.find((found) => found.file === row.file && found.expression === row.expression)!.at;
      for (const pattern of await row.patterns()) add(at, pattern.source, pattern.flags);
    }
    const verdicts = await inBatches([...checks.values()], 2, (entry) => judge(entry.at.join(', '), entry.source, entry.flags));
    // Which fuzz verdicts V8 refuted, so a reader of the run can see them.
    const refuted = verdicts.filter((verdict) => verdict.confirmedLinear !== undefined);
    if (refuted.length > 0) console.info(`${checks.size} patterns checked; fuzz verdicts refuted in V8:\n${refuted.map((verdict) => `  ${verdict.detail}; V8 grew ${verdict.confirmedLinear!.toFixed(1)}× from n to 8n`).join('\n')}`);
    expect(verdicts.filter((verdict) => !verdict.ok).map((verdict) => verdict.detail)).toEqual([]);
  }, 600_000);
});
