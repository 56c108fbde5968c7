/**
 * `context-compiler` — the command line for people: serve the API, compile a persona's or a
 * worker's prompt in process (no server needed), read a run's trace, find runs, and compare
 * two runs (the viewer's comparison, `ui/src/compare.ts`, which is pure and shared).
 * `main` runs one command line and returns its exit status; the bin (src/cli.ts) gives it the
 * process's arguments, environment and output, a test its own.
 */
import { parseArgs } from 'node:util';
import { BrainMissingError, EXIT_NO_BRAIN, UsageError } from './exit.js';
import { OPTIONS, type OptionName } from './options.js';
import { printer, PROCESS_OUTPUT, type Output, type Printer } from './print.js';

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
  trace <runId>                  Print every traced event of a run, a page at a time, and for a voice call
                                 its connect and refresh runs: each event's input (live context, topic,
                                 task) first, its JSON lines decoded a line each; exits 3 when the run's
                                 hash chain is broken (altered, forged, removed or reordered events).
  runs                           List traced runs, newest first, a page at a time: the minute each was
                                 compiled for, its subject, topic, role, engine, status and warnings;
                                 a call's refresh run under its connect (↳ refresh).
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
      --prompts                  trace: also print the exact delivered system prompt.
  status                         Is the service ready (/readyz, check by check), how many compiles failed
                                 (by problem code) and how many connects were answered without a session
                                 (the voice server fell back), counted since the service started (/metrics);
                                 exits 1 when it is not ready or cannot be reached.
      --url <url>                The service (default: CONTEXT_COMPILER_URL, else http://127.0.0.1:8080;
                                 token from CONTEXT_COMPILER_TOKEN).  --json prints it as JSON.
  migrate                        Create or migrate the PostgreSQL trace tables (TRACE_DATABASE_URL or
                                 TRACE_DATABASE_URL_FILE); the service also does it at start.
  help                           Show this help.

Text from a trace, a brain or a service is printed inert: terminal escape sequences, control
and bidi characters are shown as markers such as ⟨U+001B⟩ (in JSON, as \\u escapes).

Exit status: 0 on success; 1 on a failed command (no such run, a service or store that cannot be
read, a compile that fails, a service that is not ready); 2 on a usage error (an unknown command or option, a bad value, an
option the command does not take or that needs another); 3 when trace finds the run's chain broken;
4 when the brain directory (--brain or BRAIN_ROOT) does not exist.`;

const COMPILE_OPTIONS: readonly OptionName[] = ['persona', 'topic', 'worker', 'channel', 'message', 'task', 'surface', 'role', 'engine', 'brain', 'now', 'timezone', 'ascii', 'json'];
const SOURCE_OPTIONS: readonly OptionName[] = ['dir', 'url', 'json'];

/** The arguments (beyond its options) each command takes: more is a usage error, never a value cut short. */
const COMMAND_ARGUMENTS: Record<string, number> = { serve: 0, compile: 0, hud: 0, trace: 1, runs: 0, diff: 2, status: 0, migrate: 0 };

/** A usage error is one line, and where to read more: the whole help buried it. */
function usageError(message: string, out: Printer): number {
  out.printError(`context-compiler: ${message}\nRun "context-compiler help" for the commands and their options.\n`);
  return 2;
}

/** The options each command takes: any other given is a usage error, never silently ignored. */
const COMMAND_OPTIONS: Record<string, readonly OptionName[]> = {
  serve: [],
  compile: COMPILE_OPTIONS,
  hud: COMPILE_OPTIONS,
  trace: [...SOURCE_OPTIONS, 'verify-sources', 'prompts', 'limit', 'cursor'],
  runs: [...SOURCE_OPTIONS, 'limit', 'cursor', 'persona', 'worker', 'status', 'outcome', 'run-id', 'request-id', 'traceparent', 'from', 'to'],
  diff: SOURCE_OPTIONS,
  status: ['url', 'json'],
  migrate: [],
};

/** Runs one command line (`argv` without node and the script) and returns its exit status; `serve` returns once the server started. */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env, output: Output = PROCESS_OUTPUT): Promise<number> {
  const out = printer(output);
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    return usageError((error as Error).message, out);
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') {
    await out.print(`${HELP}\n`);
    return command === undefined && !values.help ? 2 : 0;
  }
  try {
    const allowed = COMMAND_OPTIONS[command];
    if (allowed === undefined) throw new UsageError(`unknown command "${command}"`);
    const foreign = (Object.keys(values) as OptionName[]).find((name) => name !== 'help' && !allowed.includes(name));
    if (foreign !== undefined) throw new UsageError(`--${foreign} is not an option of ${command}`);
    const extra = rest.slice(COMMAND_ARGUMENTS[command]);
    if (extra.length > 0) {
      // `--task Send the digest` gave the task "Send" and left "the digest" behind.
      throw new UsageError(`${command} does not take "${extra.join(' ')}": quote a value with spaces (--task "Send the digest")`);
    }
    // Each command loads what it needs when it runs: a usage error or --help loads none of it.
    switch (command) {
      case 'serve':
        await import('../server.js');
        return 0;
      case 'compile':
      case 'hud':
        await (await import('./compile-command.js')).compile(values, env, command, out);
        return 0;
      case 'trace':
        return await (await import('./trace-commands.js')).trace(rest, values, env, out);
      case 'runs':
        await (await import('./trace-commands.js')).runs(values, env, out);
        return 0;
      case 'diff':
        await (await import('./trace-commands.js')).diff(rest, values, env, out);
        return 0;
      case 'status':
        return await (await import('./status-command.js')).status(values, env, out);
      default:
        await (await import('./trace-commands.js')).migrate(env, out);
        return 0;
    }
  } catch (error) {
    if (error instanceof UsageError) return usageError(error.message, out);
    // A ConfigError, a ContextCompilerError, a store's or a compile's error: each says what failed.
    out.printError(`context-compiler: ${error instanceof Error ? error.message : String(error)}\n`);
    return error instanceof BrainMissingError ? EXIT_NO_BRAIN : 1;
  }
}
