#!/usr/bin/env node
/**
 * `context-compiler` — the command line for people: serve the API, compile a persona's or a
 * worker's prompt in process (no server needed), and read a run's trace.
 */
import { resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { pino } from 'pino';
import { ContextCompilerError, createClient } from './client.js';
import { formatTrace } from './cli/format-trace.js';
import { terminalJson, terminalText } from './cli/terminal-text.js';
import { ConfigError, loadConfig } from './config.js';
import { ProblemError } from './errors.js';
import { isSafeId } from '../schemas/ids.js';
import { DEFAULT_TRACE_PAGE_EVENTS, MAX_TRACE_PAGE_EVENTS, type RunTrace } from '../schemas/trace.js';

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
      --brain <dir>              The brain to read (default: BRAIN_ROOT, else the bundled example brain).
      --now <iso>                The instant to compile for, e.g. 2026-11-30T17:30:00Z (reproducible output).
      --timezone <zone>          The operator's IANA time zone (default: heartbeat-state, else DEFAULT_TIMEZONE).
      --engine <engine>          The model or engine the prompt is for (enters the route key only).
      --json                     Print the whole compile result as JSON instead of the prompt.
  hud --persona <mars|venus>     Compile as above and print its heads-up display instead of the prompt:
  hud --worker <worker>          every brain file looked for, found or missing, sorted by path, with its
                                 bytes, tokens, the line range read when only part was taken, the
                                 blocks it became and its share of the budget. Takes the compile
                                 options; --json prints the HUD as JSON.
  trace <runId>                  Print every traced event of a run, a page at a time, from the trace
                                 store the service is configured with (TRACE_DATABASE_URL, else TRACE_DIR).
      --dir <dir>                Read the trace files in this directory instead.
      --url <url>                Ask a running service instead (default: CONTEXT_COMPILER_URL unless
                                 --dir is given; token from CONTEXT_COMPILER_TOKEN).
      --verify-sources           With --url: mark brain files that changed since the run, paths
                                 that appeared and directories whose files changed.
      --prompts                  Also print the exact delivered prompts.
      --limit <n>                Events per page (1-100, default 20).
      --cursor <cursor>          Start at this page (a nextCursor printed before).
      --json                     Print one page as JSON (the first, or --cursor's), with its nextCursor.
  migrate                        Create or migrate the PostgreSQL trace tables (TRACE_DATABASE_URL or
                                 TRACE_DATABASE_URL_FILE); the service also does it at start.
  help                           Show this help.

Text from a trace, a brain or a service is printed inert: terminal escape sequences, control
and bidi characters are shown as markers such as ⟨U+001B⟩ (in JSON, as \\u escapes).

Exit status: 0 on success, 1 on a failed command, 2 on a usage error.`;

class UsageError extends Error {}

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
  help: { type: 'boolean', short: 'h' },
} satisfies ParseArgsConfig['options'];

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

/** One page of a run, from a service or a store: what `trace` needs of either. */
type PageReader = (cursor: string | undefined) => Promise<RunTrace | null>;

async function trace(runId: string | undefined, values: Values, env: NodeJS.ProcessEnv): Promise<void> {
  if (!runId) throw new UsageError('trace needs a run id: context-compiler trace <runId>');
  if (!isSafeId(runId)) throw new UsageError(`"${runId}" is not a run id ([A-Za-z0-9_:-], at most 128 characters)`);
  const limit = values.limit === undefined ? DEFAULT_TRACE_PAGE_EVENTS : Number(values.limit);
  if (!(Number.isInteger(limit) && limit >= 1 && limit <= MAX_TRACE_PAGE_EVENTS)) throw new UsageError(`--limit must be a whole number from 1 to ${MAX_TRACE_PAGE_EVENTS}`);
  // An explicit --dir beats a service URL that is only in the environment.
  const url = values.url ?? (values.dir === undefined ? env['CONTEXT_COMPILER_URL'] : undefined);
  let read: PageReader;
  let close: () => Promise<void>;
  if (url) {
    const client = createClient({ baseUrl: url, ...(env['CONTEXT_COMPILER_TOKEN'] ? { token: env['CONTEXT_COMPILER_TOKEN'] } : {}) });
    read = async (cursor) => {
      try {
        return await client.trace(runId, { verifySources: values['verify-sources'] === true, limit, ...(cursor === undefined ? {} : { cursor }) });
      } catch (error) {
        if (error instanceof ContextCompilerError && error.status === 404) return null;
        throw error;
      }
    };
    close = () => client.close();
  } else {
    const { createTraceStoreFromConfig } = await import('./io/trace/index.js');
    // --dir reads trace files even where the service is configured for a database.
    const config = loadConfig({ ...env, ...(values.dir ? { TRACE_DIR: values.dir, TRACE_DATABASE_URL: '', TRACE_DATABASE_URL_FILE: '' } : {}) });
    const store = createTraceStoreFromConfig(config, pino({ level: 'silent' }));
    // The person at the store's files or database reads every caller's runs.
    read = async (cursor) => (await store.readRun(runId, { limit, ...(cursor === undefined ? {} : { cursor }) })) as RunTrace | null;
    close = () => store.close();
  }
  try {
    let cursor = values.cursor;
    let first = 1;
    // One page in memory at a time, whatever the run holds.
    for (;;) {
      const page = await read(cursor);
      if (!page) {
        if (cursor === values.cursor) throw new Error(`no run ${runId} in the trace store`);
        break;
      }
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
    await close();
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
        await trace(rest[0], values, env);
        return 0;
      case 'migrate':
        await migrate(env);
        return 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      printError(`context-compiler: ${error.message}\n\n${HELP}\n`);
      return 2;
    }
    const message =
      error instanceof ConfigError || error instanceof ContextCompilerError || error instanceof Error ? error.message : String(error);
    printError(`context-compiler: ${message}\n`);
    return 1;
  }
}

const exitCode = await run(process.argv.slice(2));
if (process.argv[2] !== 'serve') process.exitCode = exitCode;
