#!/usr/bin/env node
/**
 * The `context-compiler` command (the package's bin): runs src/cli/main.ts's `main` on the
 * process's arguments, environment and output, and exits with its status. `serve` keeps the
 * process running: the server decides when it exits.
 */
import { main } from './cli/main.js';

const exitCode = await main(process.argv.slice(2));
if (process.argv[2] !== 'serve') process.exitCode = exitCode;
