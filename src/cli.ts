#!/usr/bin/env node
/**
 * `context-compiler` — the command line for people: serve the API, compile a persona's or a
 * worker's prompt in process (no server needed), read a run's trace, find runs, and compare
 * two runs (the viewer's comparison, `ui/src/compare.ts`, which is pure and shared).
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { pino } from 'pino';
import { ContextCompilerError } from './client.js';
import { formatDiff } from './cli/format-diff.js';
import { formatRuns } from './cli/format-runs.js';
import { formatTrace } from './cli/format-trace.js';
import { terminalJson, terminalText } from './cli/terminal-text.js';
import { openTraceSource, TraceSourceUsageError, type TraceSource } from './cli/trace-source.js';
import { ConfigError, loadConfig } from './config.js';
import { sha256Hex } from './core/digest.js';
import { ProblemError } from './errors.js';
import { isSafeId } from '../schemas/ids.js';
import { DEFAULT_TRACE_PAGE_EVENTS, MAX_TRACE_PAGE_EVENTS, RunListQuerySchema } from '../schemas/trace.js';
import { blockTextDiffs, compareRuns, compileMinute, latestComparable } from '../ui/src/compare.js';

const HELP = `Usage: context-compiler <command> [options]

Commands:
  serve                          Start the HTTP service (configured by environment variables; see README).
  compile --persona <mars|venus> Compile a persona's prompt in process and print it.
      --topic <topicId>          Add a topic from topics/<topicId>.md.
      --ascii                    Replace typographic Unicode with ASCII.
  compile --worker <worker>      Compile a worker's prompt in process, as POST /compile would.
      --channel <channelId>      The channel whose purpose applies (channels/<channelId>/purpose.md).
      --message <text>           The turn's message (phase turn); without it, phase start.
      --task <text>              A task to start with (phase start).
      --surface <surface>        voice, direct, queued-task or chat (default: chat with --channel, else direct).
      --role <role>              The role to play, one the worker's policy admits (default: its default role).
    either:
      --brain <dir>              The brain to read (default: BRAIN_ROOT, else the bundled example brain);
                                 a directory that does not exist exits 4.
      --now <iso>                The instant to compile for, e.g. 2026-11-30T17:30:00Z (reproducible output).
      --timezone <zone>          The operator's IANA time zone (default: heartbeat-state, else DEFAULT_TIMEZONE).
      --engine <engine>          The model or engine the prompt is for (enters the route key only).
      --json                     Print the whole compile result as JSON instead of the prompt.
  hud --persona <mars|venus>     Compile as above and print its heads-up display instead of the prompt:
  hud --worker <worker>          every brain file looked for, found or missing, sorted by path, with its
                                 bytes, tokens, the line range read when only part was taken, the
                                 blocks it became and its share of the budget. Takes the compile
                                 options; --json prints the HUD as JSON.
  trace <runId>                  Print every traced event of a run, a page at a time; exits 3 when the
                                 run's hash chain is broken (altered, forged, removed or reordered events).
  runs                           List traced runs, newest first, a page at a time: the minute each was
                                 compiled for, its subject, topic, role, engine, status and warnings.
      --persona <p> --worker <w> --status <code> --outcome <delivered|not-modified|failed>
                                 Filters on each run's latest event.
      --run-id <id>              Only this run.
      --request-id <id>          Only the run holding an event of this request (the requestId in a log line).
      --traceparent <tp>         Only runs holding an event of this W3C trace (a traceparent or its trace id).
      --from <iso> --to <iso>    Only runs whose latest event was traced in this range (to excluded).
  diff <runA> <runB>             Compare two runs of a persona or worker, as the viewer does: what differs,
                                 the cache boundaries that held or moved and why, and the text diff of
                                 every block that differs (each text checked against its sha256).
    trace, runs and diff read the trace store the service is configured with (TRACE_DATABASE_URL,
    else TRACE_DIR) and say which:
      --dir <dir>                Read the trace files in this directory instead.
      --url <url>                Ask a running service instead (default: CONTEXT_COMPILER_URL unless
                                 --dir is given; token from CONTEXT_COMPILER_TOKEN).
      --limit <n>                trace: events per page (1-100, default 20); runs: runs per page (1-100, default 20).
      --cursor <cursor>          Start at this page (a cursor printed before).
      --json                     Print one page (trace, runs) or the comparison (diff) as JSON.
      --verify-sources           trace, with --url: mark brain files that changed since the run, paths
                                 that appeared and directories whose files changed.
      --prompts                  trace: also print the exact delivered prompts.
  migrate                        Create or migrate the PostgreSQL trace tables (TRACE_DATABASE_URL or
                                 TRACE_DATABASE_URL_FILE); the service also does it at start.
  help                           Show this help.

Text from a trace, a brain or a service is printed inert: terminal escape sequences, control
and bidi characters are shown as markers such as ⟨U+001B⟩ (in JSON, as \\u escapes).

Exit status: 0 on success; 1 on a failed command (no such run, a service or store that cannot be
read, a compile that fails); 2 on a usage error (an unknown command or option, a bad value, an
option the command does not take or that needs another); 3 when trace finds the run's chain broken;
4 when the brain directory (--brain or BRAIN_ROOT) does not exist.`;

class UsageError extends Error {}
class BrainMissingError extends Error {}

const OPTIONS = {
  persona: { type: 'string' },
  topic: { type: 'string' },
  worker: { type: 'string' },
  channel: { type: 'string' },
  message: { type: 'string' },
  task: { type: 'string' },
  surface: { type: 'string' },
  role: { type: 'string' },
  engine: { type: 'string' },
  brain: { type: 'string' },
  now: { type: 'string' },
  timezone: { type: 'string' },
  ascii: { type: 'boolean' },
  json: { type: 'boolean' },
  dir: { type: 'string' },
  url: { type: 'string' },
  'verify-sources': { type: 'boolean' },
  prompts: { type: 'boolean' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  status: { type: 'string' },
  outcome: { type: 'string' },
  'run-id': { type: 'string' },
  'request-id': { type: 'string' },
  traceparent: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} satisfies ParseArgsConfig['options'];

type OptionName = keyof typeof OPTIONS;

const COMPILE_OPTIONS: readonly OptionName[] = ['persona', 'topic', 'worker', 'channel', 'message', 'task', 'surface', 'role', 'engine', 'brain', 'now', 'timezone', 'ascii', 'json'];
const SOURCE_OPTIONS: readonly OptionName[] = ['dir', 'url', 'json'];

/** The options each command takes: any other given is a usage error, never silently ignored. */
const COMMAND_OPTIONS: Record<string, readonly OptionName[]> = {
  serve: [],
  compile: COMPILE_OPTIONS,
  hud: COMPILE_OPTIONS,
  trace: [...SOURCE_OPTIONS, 'verify-sources', 'prompts', 'limit', 'cursor'],
  runs: [...SOURCE_OPTIONS, 'limit', 'cursor', 'persona', 'worker', 'status', 'outcome', 'run-id', 'request-id', 'traceparent', 'from', 'to'],
  diff: SOURCE_OPTIONS,
  migrate: [],
};

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>['values'];

function write(text: string): Promise<void> {
  return new Promise((done) => {
    if (process.stdout.write(text)) done();
    else process.stdout.once('drain', done);
  });
}

/** Every printer goes through these: text from a trace, a brain or a service reaches the terminal inert. */
const print = (text: string) => write(terminalText(text));
const printJson = (value: unknown) => write(`${terminalJson(value)}\n`);
const printError = (text: string) => void process.stderr.write(terminalText(text));

/** Exit status of `trace` when the run's hash chain is broken (documented in HELP and the README). */
const EXIT_CHAIN_BROKEN = 3;
/** Exit status of `compile` and `hud` when the brain directory does not exist. */
const EXIT_NO_BRAIN = 4;

/** Opens where `trace`, `runs` and `diff` read runs from, and says which on stderr. */
async function source(values: Values, env: NodeJS.ProcessEnv): Promise<TraceSource> {
  let opened: TraceSource;
  try {
    opened = await openTraceSource({ dir: values.dir, url: values.url }, env);
  } catch (error) {
    if (error instanceof TraceSourceUsageError) throw new UsageError(error.message);
    throw error;
  }
  printError(`context-compiler: reading ${opened.name}\n`);
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
async function trace(args: string[], values: Values, env: NodeJS.ProcessEnv): Promise<number> {
  const runId = runIdArgument(args[0], 'trace: context-compiler trace <runId>');
  const limit = pageLimit(values, DEFAULT_TRACE_PAGE_EVENTS);
  if (values['verify-sources'] && values.url === undefined && (values.dir !== undefined || !env['CONTEXT_COMPILER_URL'])) {
    throw new UsageError('--verify-sources needs --url (or CONTEXT_COMPILER_URL): the running service re-reads its brain to say what changed');
  }
  const runs = await source(values, env);
  let broken = false;
  try {
    let cursor = values.cursor;
    let first = 1;
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
      if (page.nextCursor === null) break;
      await print(`\n(next page: --cursor ${page.nextCursor})\n\n`);
      first += page.events.length;
      cursor = page.nextCursor;
    }
  } finally {
    await runs.close();
  }
  if (!broken) return 0;
  printError(`context-compiler: the hash chain of run ${runId} is broken: its events were altered, forged, removed or reordered (exit ${EXIT_CHAIN_BROKEN})\n`);
  return EXIT_CHAIN_BROKEN;
}

/** `runs`: a page of runs, with GET /runs's filters. */
async function runs(values: Values, env: NodeJS.ProcessEnv): Promise<void> {
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
  const opened = await source(values, env);
  try {
    const page = await opened.listRuns(parsed.data);
    await (values.json ? printJson(page) : print(formatRuns(page)));
  } finally {
    await opened.close();
  }
}

/** `diff A B`: the comparison the viewer's compare page shows, with each changed block's text diff. */
async function diff(args: string[], values: Values, env: NodeJS.ProcessEnv): Promise<void> {
  const ids = [runIdArgument(args[0], 'diff: context-compiler diff <runA> <runB>'), runIdArgument(args[1], 'diff: context-compiler diff <runA> <runB>')];
  if (args.length > 2) throw new UsageError('diff compares two runs: context-compiler diff <runA> <runB>');
  const opened = await source(values, env);
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

async function migrate(env: NodeJS.ProcessEnv): Promise<void> {
  const config = loadConfig(env);
  if (config.traceDatabaseUrl === null) {
    throw new UsageError('migrate needs TRACE_DATABASE_URL (or TRACE_DATABASE_URL_FILE); trace files need no migration');
  }
  const { migrateTraceDatabase } = await import('./io/trace/index.js');
  let result;
  try {
    result = await migrateTraceDatabase(config.traceDatabaseUrl, pino({ level: 'silent' }));
  } catch (error) {
    // The message says what failed and its code, never where the database is or how to log in.
    throw new Error(`trace database: ${(error as Error).message}`);
  }
  await print(
    result.applied.length > 0
      ? `trace schema migrated to version ${result.version} (applied ${result.applied.join(', ')})\n`
      : `trace schema already at version ${result.version}\n`,
  );
}

async function compile(values: Values, env: NodeJS.ProcessEnv, command: 'compile' | 'hud' = 'compile'): Promise<void> {
  if (!values.persona && !values.worker) throw new UsageError(`${command} needs --persona (mars or venus) or --worker <worker>`);
  if (values.persona && values.worker) throw new UsageError(`${command} takes --persona or --worker, not both`);
  const worker = ['channel', 'message', 'task', 'surface', 'role'].filter((flag) => values[flag as keyof Values] !== undefined);
  if (values.persona && worker.length > 0) throw new UsageError(`--${worker[0]} is for --worker, not --persona`);
  if (values.worker && (values.topic || values.ascii)) throw new UsageError(`--${values.topic ? 'topic' : 'ascii'} is for --persona, not --worker`);
  const { compileInProcess } = await import('./cli/compile.js');
  const config = loadConfig({ ...env, ...(values.brain ? { BRAIN_ROOT: resolve(values.brain) } : {}) });
  // A brain that is not there would compile a prompt from nothing, quietly: refuse it.
  const root = await stat(config.brainRoot).catch(() => null);
  if (root === null || !root.isDirectory()) {
    throw new BrainMissingError(
      `${values.brain !== undefined ? `--brain ${values.brain}` : `BRAIN_ROOT ${config.brainRoot}`}: ${root === null ? 'no such directory' : 'not a directory'}; ` +
        'give the brain to read (the bundled example is examples/brain)',
    );
  }
  let result;
  try {
    result = await compileInProcess(config, {
      ...(values.persona ? { persona: values.persona } : {}),
      ...(values.worker ? { worker: values.worker } : {}),
      ...(values.topic ? { topicId: values.topic } : {}),
      ...(values.channel !== undefined ? { channelId: values.channel } : {}),
      ...(values.message !== undefined ? { message: values.message } : {}),
      ...(values.task !== undefined ? { task: values.task } : {}),
      ...(values.surface !== undefined ? { surface: values.surface } : {}),
      ...(values.role !== undefined ? { role: values.role } : {}),
      ...(values.engine !== undefined ? { engine: values.engine } : {}),
      ...(values.now ? { now: values.now } : {}),
      ...(values.timezone ? { timezone: values.timezone } : {}),
      ...(values.ascii ? { sanitize: 'ascii' as const } : {}),
    });
  } catch (error) {
    // A bad flag value (unsafe id, unknown persona or worker, bad --now or --timezone) is a usage error.
    if (error instanceof ProblemError && (error.statusCode === 400 || error.statusCode === 404)) throw new UsageError(error.detail);
    throw error;
  }
  if (command === 'hud') {
    const { formatHud } = await import('./cli/format-hud.js');
    const heading = `HUD of ${values.persona ? `persona ${values.persona}` : `worker ${values.worker}`}`;
    await (values.json ? printJson(result.hud) : print(formatHud(result.hud, heading)));
    for (const warning of result.warnings) printError(`warning: ${warning}\n`);
    return;
  }
  if (values.json) await printJson(result);
  // A terminal gets the instructions inert, and a final newline so the shell prompt starts on
  // a line of its own; a pipe gets them byte for byte, as `?format=text` returns them.
  else if (process.stdout.isTTY) await print(`${result.instructions}\n`);
  else await write(result.instructions);
  for (const warning of result.warnings) printError(`warning: ${warning}\n`);
}

export async function run(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    printError(`context-compiler: ${(error as Error).message}\n\n${HELP}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') {
    await print(`${HELP}\n`);
    return command === undefined && !values.help ? 2 : 0;
  }
  try {
    const allowed = COMMAND_OPTIONS[command];
    if (allowed === undefined) throw new UsageError(`unknown command "${command}"`);
    const foreign = (Object.keys(values) as OptionName[]).find((name) => name !== 'help' && !allowed.includes(name));
    if (foreign !== undefined) throw new UsageError(`--${foreign} is not an option of ${command}`);
    switch (command) {
      case 'serve':
        await import('./server.js');
        return 0;
      case 'compile':
        await compile(values, env);
        return 0;
      case 'hud':
        await compile(values, env, 'hud');
        return 0;
      case 'trace':
        return await trace(rest, values, env);
      case 'runs':
        await runs(values, env);
        return 0;
      case 'diff':
        await diff(rest, values, env);
        return 0;
      default:
        await migrate(env);
        return 0;
    }
  } catch (error) {
    if (error instanceof UsageError) {
      printError(`context-compiler: ${error.message}\n\n${HELP}\n`);
      return 2;
    }
    const message =
      error instanceof ConfigError || error instanceof ContextCompilerError || error instanceof Error ? error.message : String(error);
    printError(`context-compiler: ${message}\n`);
    return error instanceof BrainMissingError ? EXIT_NO_BRAIN : 1;
  }
}

const exitCode = await run(process.argv.slice(2));
if (process.argv[2] !== 'serve') process.exitCode = exitCode;
