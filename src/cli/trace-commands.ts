/**
 * The commands that read the trace store or set it up: `trace`, `runs`, `diff` (from trace
 * files, the PostgreSQL trace database or a running service) and `migrate`. Loaded only when
 * one of them runs: a usage error, `--help` or `compile` never needs the schemas, the
 * store or the HTTP client.
 */
import { pino } from 'pino';
import { loadConfig } from '../config.js';
import { sha256Hex } from '../core/digest.js';
import { isSafeId } from '../../schemas/ids.js';
import { DEFAULT_TRACE_PAGE_EVENTS, MAX_TRACE_PAGE_EVENTS, RunListQuerySchema, type RunTrace } from '../../schemas/trace.js';
import { blockTextDiffs, compareRuns, compileMinute, latestComparable } from '../../ui/src/compare.js';
import { CALL_PARTS, callPartOf } from '../../ui/src/model.js';
import { EXIT_CHAIN_BROKEN, UsageError } from './exit.js';
import { formatDiff } from './format-diff.js';
import { formatRuns } from './format-runs.js';
import { formatTrace } from './format-trace.js';
import type { Values } from './options.js';
import type { Printer } from './print.js';
import { openTraceSource, TraceSourceUsageError, type TraceSource } from './trace-source.js';

/** Opens where `trace`, `runs` and `diff` read runs from, and says which on stderr. */
async function source(values: Values, env: NodeJS.ProcessEnv, out: Printer): Promise<TraceSource> {
  let opened: TraceSource;
  try {
    opened = await openTraceSource({ dir: values.dir, url: values.url }, env);
  } catch (error) {
    if (error instanceof TraceSourceUsageError) throw new UsageError(error.message);
    throw error;
  }
  out.printError(`context-compiler: reading ${opened.name}\n`);
  return opened;
}

function pageLimit(values: Values, fallback: number): number {
  const limit = values.limit === undefined ? fallback : Number(values.limit);
  if (!(Number.isInteger(limit) && limit >= 1 && limit <= MAX_TRACE_PAGE_EVENTS)) throw new UsageError(`--limit must be a whole number from 1 to ${MAX_TRACE_PAGE_EVENTS}`);
  return limit;
}

function runIdArgument(runId: string | undefined, usage: string): string {
  if (!runId) throw new UsageError(`${usage} needs a run id`);
  if (!isSafeId(runId)) throw new UsageError(`"${runId}" is not a run id ([A-Za-z0-9_:-], at most 128 characters)`);
  return runId;
}

/** Prints the run a page at a time; exits `EXIT_CHAIN_BROKEN` when any page's chain is broken. */
export async function trace(args: string[], values: Values, env: NodeJS.ProcessEnv, out: Printer): Promise<number> {
  const { print, printError, printJson } = out;
  const runId = runIdArgument(args[0], 'trace: context-compiler trace <runId>');
  const limit = pageLimit(values, DEFAULT_TRACE_PAGE_EVENTS);
  if (values['verify-sources'] && values.url === undefined && (values.dir !== undefined || !env['CONTEXT_COMPILER_URL'])) {
    throw new UsageError('--verify-sources needs --url (or CONTEXT_COMPILER_URL): the running service re-reads its brain to say what changed');
  }
  const runs = await source(values, env, out);
  let broken = false;
  try {
    let cursor = values.cursor;
    let first = 1;
    let call: string | null = null;
    // One page in memory at a time, whatever the run holds.
    for (;;) {
      const page = await runs.readRun(runId, { limit, ...(cursor === undefined ? {} : { cursor }), verifySources: values['verify-sources'] === true });
      if (!page) {
        if (cursor === values.cursor) throw new Error(`no run ${runId} in ${runs.name}`);
        break;
      }
      broken ||= page.chain.status === 'broken' || page.events.some((event) => event.chain === 'broken');
      if (values.json) {
        await printJson(page);
        break;
      }
      await print(formatTrace(page, { prompts: values.prompts === true, first }));
      if (first === 1) call = callOf(page);
      if (page.nextCursor === null) break;
      await print(`\n(next page: --cursor ${page.nextCursor})\n\n`);
      first += page.events.length;
      cursor = page.nextCursor;
    }
    if (call !== null && !values.json) await print(await callLines(runs, runId, call));
  } finally {
    await runs.close();
  }
  if (!broken) return 0;
  printError(`context-compiler: the hash chain of run ${runId} is broken: its events were altered, forged, removed or reordered (exit ${EXIT_CHAIN_BROKEN})\n`);
  return EXIT_CHAIN_BROKEN;
}

/** The connect of the call a run's first page belongs to: a persona connect itself, or the run a refresh or reconnect names as its parent. */
function callOf(page: RunTrace): string | null {
  const parent = page.events.find((event) => event.parentRunId !== undefined)?.parentRunId;
  if (parent !== undefined) return parent;
  const latest = page.events.at(-1);
  if (latest === undefined) return null;
  const part = callPartOf({ runId: page.runId, route: latest.route });
  if (part !== null) return part.connect;
  return page.events.some((event) => event.subject.kind === 'persona' && event.route === `GET /context/${event.subject.id}`) ? page.runId : null;
}

/** The call a run is part of: its connect and every refresh or reconnect run, as found in the store, with how to read each. */
async function callLines(source: TraceSource, runId: string, connect: string): Promise<string> {
  const lines = ['', `call: connect ${connect}${connect === runId ? ' (this run)' : ''}`];
  let parts = 0;
  for (const part of CALL_PARTS) {
    const partRunId = `${connect}:${part}`;
    const [run] = (await source.listRuns({ runId: partRunId, limit: 1 })).runs;
    if (run === undefined || callPartOf(run) === null) continue;
    parts += 1;
    lines.push(`  ↳ ${part} ${partRunId}: ${run.events} event${run.events === 1 ? '' : 's'}, latest ${run.status} ${run.outcome}${partRunId === runId ? ' (this run)' : ''}`);
  }
  if (parts === 0) lines.push('  no mid-call refresh and no reconnect');
  if (connect !== runId) lines.push(`  (context-compiler trace ${connect} for the connect)`);
  return `${lines.join('\n')}\n`;
}

/** `runs`: a page of runs, with GET /runs's filters. */
export async function runs(values: Values, env: NodeJS.ProcessEnv, out: Printer): Promise<void> {
  const { print, printJson } = out;
  const query: Record<string, string | number> = { limit: pageLimit(values, 20) };
  for (const [flag, name] of [
    ['persona', 'persona'],
    ['worker', 'worker'],
    ['status', 'status'],
    ['outcome', 'outcome'],
    ['run-id', 'runId'],
    ['request-id', 'requestId'],
    ['traceparent', 'traceparent'],
    ['from', 'from'],
    ['to', 'to'],
    ['cursor', 'cursor'],
  ] as const) {
    const value = values[flag];
    if (value !== undefined) query[name] = value;
  }
  // The same rules as GET /runs, checked here so a bad value is a usage error before anything is read.
  const parsed = RunListQuerySchema.safeParse(Object.fromEntries(Object.entries(query).map(([key, value]) => [key, String(value)])));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = String(issue.path[0]);
    throw new UsageError(`--${field.replace(/[A-Z]/g, (letter) => `-${letter.toLowerCase()}`)}: ${issue.message}`);
  }
  const opened = await source(values, env, out);
  try {
    const page = await opened.listRuns(parsed.data);
    await (values.json ? printJson(page) : print(formatRuns(page)));
  } finally {
    await opened.close();
  }
}

/** `diff A B`: the comparison the viewer's compare page shows, with each changed block's text diff. */
export async function diff(args: string[], values: Values, env: NodeJS.ProcessEnv, out: Printer): Promise<void> {
  const { print, printJson } = out;
  const ids = [runIdArgument(args[0], 'diff: context-compiler diff <runA> <runB>'), runIdArgument(args[1], 'diff: context-compiler diff <runA> <runB>')];
  if (args.length > 2) throw new UsageError('diff compares two runs: context-compiler diff <runA> <runB>');
  const opened = await source(values, env, out);
  try {
    const events = [];
    for (const runId of ids) {
      const found = await latestComparable(runId, async (cursor) => opened.readRun(runId, { limit: MAX_TRACE_PAGE_EVENTS, ...(cursor === null ? {} : { cursor }) }));
      if (found === null) throw new Error(`run ${runId} delivered no prompt in ${opened.name} (no such run, or only failed compiles)`);
      events.push(found);
    }
    const comparison = compareRuns(events[0]!, events[1]!);
    const texts = await blockTextDiffs(comparison, sha256Hex);
    if (values.json) {
      const { before, after, ...rest } = comparison;
      const strip = (compared: typeof before) => ({ runId: compared.runId, index: compared.index, count: compared.count, at: compared.event.at, compiledFor: compileMinute(compared.event) });
      await printJson({ before: strip(before), after: strip(after), ...rest, texts: Object.fromEntries(texts) });
    } else await print(formatDiff(comparison, texts));
  } finally {
    await opened.close();
  }
}

export async function migrate(env: NodeJS.ProcessEnv, out: Printer): Promise<void> {
  const config = loadConfig(env);
  if (config.traceDatabaseUrl === null) {
    throw new UsageError('migrate needs TRACE_DATABASE_URL (or TRACE_DATABASE_URL_FILE); trace files need no migration');
  }
  const { migrateTraceDatabase } = await import('../io/trace/index.js');
  let result;
  try {
    result = await migrateTraceDatabase(config.traceDatabaseUrl, pino({ level: 'silent' }));
  } catch (error) {
    // The message says what failed and its code, never where the database is or how to log in.
    throw new Error(`trace database: ${(error as Error).message}`);
  }
  await out.print(
    result.applied.length > 0
      ? `trace schema migrated to version ${result.version} (applied ${result.applied.join(', ')})\n`
      : `trace schema already at version ${result.version}\n`,
  );
}
