/**
 * `compile` and `hud`: the flags checked first, so that a flag the other subject takes is a
 * usage error before the compiler (and its tokenizer) is loaded; then a compile in process
 * (src/cli/compile.ts), printed.
 */
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { BrainMissingError, UsageError } from './exit.js';
import type { Values } from './options.js';
import type { Printer } from './print.js';

/** Compiles what the flags name and prints the prompt, the whole result (--json) or, for `hud`, its heads-up display. */
export async function compile(values: Values, env: NodeJS.ProcessEnv, command: 'compile' | 'hud', out: Printer): Promise<void> {
  const { print, printError, printJson, write } = out;
  if (!values.persona && !values.worker) throw new UsageError(`${command} needs --persona (mars or venus) or --worker <worker>`);
  if (values.persona && values.worker) throw new UsageError(`${command} takes --persona or --worker, not both`);
  const worker = ['channel', 'message', 'task', 'surface', 'role'].filter((flag) => values[flag as keyof Values] !== undefined);
  if (values.persona && worker.length > 0) throw new UsageError(`--${worker[0]} is for --worker, not --persona`);
  if (values.worker && (values.topic || values.ascii)) throw new UsageError(`--${values.topic ? 'topic' : 'ascii'} is for --persona, not --worker`);
  const [{ compileInProcess }, { loadConfig }, { ProblemError }] = await Promise.all([import('./compile.js'), import('../config.js'), import('../errors.js')]);
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
    const { formatHud } = await import('./format-hud.js');
    const heading = `HUD of ${values.persona ? `persona ${values.persona}` : `worker ${values.worker}`}`;
    await (values.json ? printJson(result.hud) : print(formatHud(result.hud, heading)));
    for (const warning of result.warnings) printError(`warning: ${warning}\n`);
    return;
  }
  if (values.json) await printJson(result);
  // A terminal gets the instructions inert, and a final newline so the shell prompt starts on
  // a line of its own; a pipe gets them byte for byte, as `?format=text` returns them.
  else if (out.terminal) await print(`${result.instructions}\n`);
  else await write(result.instructions);
  for (const warning of result.warnings) printError(`warning: ${warning}\n`);
}
