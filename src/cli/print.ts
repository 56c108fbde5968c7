import { terminalJson, terminalText } from './terminal-text.js';

/** Writes to stdout, waiting for it to drain: a long page is never cut short by an exit. */
export function write(text: string): Promise<void> {
  return new Promise((done) => {
    if (process.stdout.write(text)) done();
    else process.stdout.once('drain', done);
  });
}

/** Every printer goes through these: text from a trace, a brain or a service reaches the terminal inert. */
export const print = (text: string) => write(terminalText(text));
export const printJson = (value: unknown) => write(`${terminalJson(value)}\n`);
export const printError = (text: string) => void process.stderr.write(terminalText(text));
