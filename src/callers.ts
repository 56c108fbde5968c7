import { readFileSync } from 'node:fs';
import { sha256Hex } from './core/digest.js';
import { isCallerName } from '../schemas/ids.js';

/**
 * The callers the service knows: one per bearer token, each
 * with a name that trace events record instead of the token. Tokens come from
 * `CONTEXT_COMPILER_TOKENS` and `CONTEXT_COMPILER_TOKENS_FILE` as `name:token` or a bare
 * token; `CONTEXT_COMPILER_READ_ALL` names the callers that may read every caller's runs.
 */
export interface Caller {
  /** What trace events, logs and the viewer show: the given name, or `token-` and 8 hex digits of the token's sha256. */
  readonly name: string;
  readonly token: string;
  /** Reads every caller's runs: granted by CONTEXT_COMPILER_READ_ALL, and always to a sole caller. */
  readonly readAll: boolean;
}

/** Thrown with a message that names the variable; `loadConfig` turns it into a ConfigError. */
export class CallerConfigError extends Error {}

const MIN_TOKEN_CHARS = 16;

/** The name an unnamed token is given: stable across restarts, and not the token (32 bits of its sha256). */
export function derivedCallerName(token: string): string {
  return `token-${sha256Hex(token).slice(0, 8)}`;
}

/** Entries separated by commas or newlines; blank entries and `#` comments are not entries. */
function entriesIn(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0 && !entry.startsWith('#'));
}

/** `name:token` when the part before the first `:` is a name, else a bare token. */
function parseEntry(entry: string, variable: string): { name: string; token: string } {
  const colon = entry.indexOf(':');
  const named = colon > 0 && isCallerName(entry.slice(0, colon));
  const token = named ? entry.slice(colon + 1) : entry;
  if (token.length < MIN_TOKEN_CHARS || /\s/.test(token)) {
    throw new CallerConfigError(`${variable}: every token must be at least ${MIN_TOKEN_CHARS} characters without spaces (as "token" or "name:token")`);
  }
  return { name: named ? entry.slice(0, colon) : derivedCallerName(token), token };
}

/**
 * The callers configured, in the order given. A file configured but holding no token stops
 * the start (it would otherwise turn authentication off without a word); so do two names
 * for one token, one name for two tokens, and a read-all grant for a name no token has.
 */
export function readCallers(inline: string | undefined, file: string | undefined, readAllList: string | undefined): Caller[] {
  const found = entriesIn(inline ?? '').map((entry) => ({ ...parseEntry(entry, 'CONTEXT_COMPILER_TOKENS'), variable: 'CONTEXT_COMPILER_TOKENS' }));
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new CallerConfigError(`CONTEXT_COMPILER_TOKENS_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const fromFile = entriesIn(text);
    if (fromFile.length === 0) {
      throw new CallerConfigError(`CONTEXT_COMPILER_TOKENS_FILE: ${file} holds no token (only blank lines or comments); put one token (or name:token) per line, or unset the variable`);
    }
    for (const entry of fromFile) found.push({ ...parseEntry(entry, 'CONTEXT_COMPILER_TOKENS_FILE'), variable: 'CONTEXT_COMPILER_TOKENS_FILE' });
  }
  const byToken = new Map<string, string>();
  const byName = new Map<string, string>();
  for (const { name, token, variable } of found) {
    const known = byToken.get(token);
    if (known !== undefined && known !== name) throw new CallerConfigError(`${variable}: one token is given two names (${known} and ${name})`);
    const other = byName.get(name);
    if (other !== undefined && other !== token) throw new CallerConfigError(`${variable}: two tokens are named ${name}; every name must be unique`);
    byToken.set(token, name);
    byName.set(name, token);
  }
  const grants = entriesIn(readAllList ?? '');
  for (const name of grants) {
    if (!byName.has(name)) {
      const names = [...byName.keys()];
      throw new CallerConfigError(
        `CONTEXT_COMPILER_READ_ALL: no token is named ${JSON.stringify(name)} (${names.length > 0 ? `the names are ${names.join(', ')}` : 'no token is configured'})`,
      );
    }
  }
  const sole = byName.size === 1;
  return [...byName].map(([name, token]) => Object.freeze({ name, token, readAll: sole || grants.includes(name) }));
}
