import { terminalJson, terminalText } from './terminal-text.js';

/** Where a command prints: the process's stdout and stderr (the bin's), or streams a test reads. */
export interface Output {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream;
}

export const PROCESS_OUTPUT: Output = { stdout: process.stdout, stderr: process.stderr };

/** Every printer goes through these: text from a trace, a brain or a service reaches the terminal inert. */
export function printer(output: Output) {
  /** Writes to stdout, waiting for it to drain: a long page is never cut short by an exit. */
  const write = (text: string): Promise<void> =>
    new Promise((done) => {
      if (output.stdout.write(text)) done();
      else output.stdout.once('drain', done);
    });
  return {
    write,
    print: (text: string) => write(terminalText(text)),
    printJson: (value: unknown) => write(`${terminalJson(value)}\n`),
    printError: (text: string) => void output.stderr.write(terminalText(text)),
    /** stdout is a terminal, not a pipe or a file. */
    terminal: output.stdout.isTTY === true,
  };
}

export type Printer = ReturnType<typeof printer>;
