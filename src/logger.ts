import { pino, type DestinationStream, type Logger } from 'pino';
import type { Config } from './config.js';

/** Paths pino must never print, whatever object a log line is given. */
export const LOG_REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'token',
  'tokens',
  'traceSigningKey',
  'traceDatabaseUrl',
  'connectionString',
  'password',
  'systemPrompt',
  'inputPrompt',
  'instructions',
];

/** The service's pino logger: JSON lines on stdout (or `destination`), the paths above redacted. */
export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = { level: config.logLevel, redact: { paths: LOG_REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}
