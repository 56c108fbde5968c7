/** How `npm start` runs the server: its environment, node, its flags, the entry point (package.json `scripts.start`). */
export interface StartCommand {
  /** `NAME=value` words before `node` (e.g. `MALLOC_ARENA_MAX=1`), set for the process as the shell sets them. */
  env: Record<string, string>;
  nodeFlags: string[];
  entry: string;
}

const ASSIGNMENT = /^([A-Z][A-Z0-9_]*)=([\w.,:/-]*)$/;

/**
 * Reads `scripts.start` of a package.json text, which must be `[NAME=value ...] node [flags]
 * <entry>` (no other shell syntax, and no NODE_OPTIONS: flags go on the command line), so the
 * bench and the tests can start the server exactly as `npm start` does and measure that process.
 */
export function parseStartCommand(packageJson: string): StartCommand {
  const script = (JSON.parse(packageJson) as { scripts?: Record<string, string> }).scripts?.['start'] ?? '';
  const words = script.trim().split(/\s+/);
  const env: Record<string, string> = {};
  let at = 0;
  for (let match = ASSIGNMENT.exec(words[at] ?? ''); match !== null && match[1] !== 'NODE_OPTIONS'; match = ASSIGNMENT.exec(words[++at] ?? '')) {
    env[match[1]!] = match[2]!;
  }
  const entry = words.at(-1) ?? '';
  const nodeFlags = words.slice(at + 1, -1);
  if (words[at] !== 'node' || words.length < at + 2 || !entry.endsWith('.js') || nodeFlags.some((flag) => !/^--[\w-]+(=\S+)?$/.test(flag))) {
    throw new Error(`package.json "start" must be "[NAME=value ...] node [--flag ...] <entry>.js", got ${JSON.stringify(script)}`);
  }
  return { env, nodeFlags, entry };
}
