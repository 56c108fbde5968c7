/**
 * The `context-compiler` command, two ways. `cli()` runs it in this process through its `main`
 * (src/cli/main.ts), with exactly the given environment (plus PATH) and its stdout and stderr
 * captured: what each command prints and the status it exits with, without a process start
 * (a Node process loading the CLI's and the compiler's modules costs far more than the command).
 * `cliProcess()` runs the built bin (dist/src/cli.js) as a process, for what only a process
 * shows: the exit status it ends with, its arguments from argv, and output through a real pipe.
 */
import { Writable } from 'node:stream';
import { main } from '../../src/cli/main.js';
import { CLI_ENTRY, runNode } from './server-process.js';

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A stream that keeps what is written to it, as a pipe to a test would (not a terminal). */
function capture(): { stream: Writable; text: () => string } {
  let text = '';
  const stream = new Writable({
    decodeStrings: false,
    write(chunk: string | Buffer, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

/** Runs `context-compiler <args>` in this process: its exit status and what it printed. */
export async function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  const stdout = capture();
  const stderr = capture();
  const code = await main(args, { PATH: process.env['PATH'] ?? '', ...env }, { stdout: stdout.stream, stderr: stderr.stream });
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

/** Runs `node dist/src/cli.js <args>` (dist/ built before the file's tests) to completion. */
export function cliProcess(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runNode([CLI_ENTRY, ...args], env);
}
