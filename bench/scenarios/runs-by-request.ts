import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { z } from 'zod';
import { fmt, out, verdict, type Verdict } from '../lib/format.js';
import { TARGETS } from '../lib/knobs.js';
import { BenchError } from '../lib/processes.js';

const QueryTimeSchema = z.object({ ms: z.number(), runs: z.number(), more: z.boolean() });

/** What `bench/runs-by-request.ts` prints: each backend's median query time and the ratio. */
const RunsByRequestSchema = z.object({
  matchingRuns: z.number(),
  events: z.number(),
  files: QueryTimeSchema.extend({ filesOpenedPerQuery: z.number(), firstListingMs: z.number() }).loose(),
  postgres: z.union([QueryTimeSchema, z.string()]),
  ratio: z.number().nullable(),
});
export type RunsByRequest = z.infer<typeof RunsByRequestSchema>;

/** The script itself: `dist/bench/runs-by-request.js` under `npm run bench`, the `.ts` under tsx. */
async function script(): Promise<{ path: string; nodeArgs: string[] }> {
  const built = fileURLToPath(new URL('../runs-by-request.js', import.meta.url));
  if (await access(built).then(() => true, () => false)) return { path: built, nodeArgs: [] };
  return { path: built.replace(/\.js$/, '.ts'), nodeArgs: process.execArgv };
}

/**
 * `GET /runs?requestId=` with `matching` runs of one request id among 6× as many others,
 * on the files backend (the matching runs in evicted files) and on PostgreSQL, each store
 * opened fresh: `bench/runs-by-request.ts`, run as its own process so its heap and its
 * database cluster end with it.
 */
export async function measureRunsByRequest(matching: number): Promise<RunsByRequest | null> {
  if (matching === 0) return null;
  process.stdout.write(`GET /runs?requestId= with ${matching.toLocaleString('en-US')} matching runs, files and PostgreSQL … `);
  const { path, nodeArgs } = await script();
  const { stdout } = await promisify(execFile)(process.execPath, [...nodeArgs, path, String(matching), String(6 * matching)], { maxBuffer: 1 << 20 }).catch((error: Error) => {
    throw new BenchError(`bench/runs-by-request failed: ${error.message}`, { cause: error });
  });
  const parsed = RunsByRequestSchema.parse(JSON.parse(stdout.slice(stdout.indexOf('{'), stdout.lastIndexOf('}') + 1)));
  out(typeof parsed.postgres === 'string' ? `files ${fmt.ms(parsed.files.ms)} ms; PostgreSQL ${parsed.postgres}` : `files ${fmt.ms(parsed.files.ms)} ms, PostgreSQL ${fmt.ms(parsed.postgres.ms)} ms`);
  return parsed;
}

/** Files over PostgreSQL within the target; INVALID when the two backends answered different pages. */
export function runsByRequestVerdict(result: RunsByRequest | null): Verdict {
  if (result === null || typeof result.postgres === 'string' || result.ratio === null) return 'n/a';
  const same = result.files.runs === result.postgres.runs && result.files.more === result.postgres.more;
  return verdict(result.ratio <= TARGETS.runsByRequestRatio, same);
}

export function printRunsByRequest(result: RunsByRequest, judged: Verdict): void {
  const label = `GET /runs?requestId= (${result.matchingRuns.toLocaleString('en-US')} matching runs in evicted files, ${result.events.toLocaleString('en-US')} events), files / PostgreSQL, median ms`;
  const postgres = typeof result.postgres === 'string' ? result.postgres : `${fmt.ms(result.postgres.ms)} ms`;
  out(`  ${label}: ${result.ratio === null ? '—' : result.ratio.toFixed(2)}  ${fmt.mark(judged)} (at most ${TARGETS.runsByRequestRatio}; ` +
    `files ${fmt.ms(result.files.ms)} ms, ${result.files.filesOpenedPerQuery} files opened per query; PostgreSQL ${postgres})`);
}
