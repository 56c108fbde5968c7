import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { PROJECT_ROOT } from './config.js';

/**
 * The service's release (package.json `version`), read once at start: every answer carries
 * it as `x-context-compiler-version`, so a client can tell which release it talks to.
 */
export const SERVICE_VERSION: string = (JSON.parse(readFileSync(resolve(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
