/** How `npm start` runs the server: node, its flags, the entry point (package.json `scripts.start`). */
export interface StartCommand {
  nodeFlags: string[];
  entry: string;
}

/**
 * Reads `scripts.start` of a package.json text, which must be `node [flags] <entry>` (no shell
 * syntax), so the bench can start the server exactly as `npm start` does and measure that process.
 */
export function parseStartCommand(packageJson: string): StartCommand {
  const script = (JSON.parse(packageJson) as { scripts?: Record<string, string> }).scripts?.['start'] ?? '';
  const words = script.trim().split(/\s+/);
  const entry = words.at(-1) ?? '';
  const nodeFlags = words.slice(1, -1);
  if (words[0] !== 'node' || !entry.endsWith('.js') || nodeFlags.some((flag) => !/^--[\w-]+(=\S+)?$/.test(flag))) {
    throw new Error(`package.json "start" must be "node [--flag ...] <entry>.js", got ${JSON.stringify(script)}`);
  }
  return { nodeFlags, entry };
}
