import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Every flag the CLI knows; each command takes a subset (`COMMAND_OPTIONS` in src/cli/main.ts). */
export const OPTIONS = {
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

export type OptionName = keyof typeof OPTIONS;

/** The flags given, as parsed. */
export type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true; strict: true }>>['values'];
