/**
 * docs/configuration.md is the one table of settings (it moved out of the README, where 40 rows
 * stood before the first prompt): every variable the service reads is in its first column,
 * and it names none the service does not read.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES, PROJECT_ROOT } from '../../src/config.js';

const read = (path: string) => readFile(join(PROJECT_ROOT, path), 'utf8');

/** The variables named in the first column of each table row (`| \`A\`, \`B\` | … |`). */
function tableVariables(markdown: string): string[] {
  return markdown
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) => [...line.slice(1, line.indexOf('|', 1)).matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((match) => match[1]!));
}

describe('docs/configuration.md', () => {
  it('documents every variable src/config.ts reads, in its table, and no other', async () => {
    const documented = tableVariables(await read('docs/configuration.md'));
    // OTEL_SDK_DISABLED is said in the sampler's row, as OpenTelemetry's own switch.
    const table = new Set([...documented, 'OTEL_SDK_DISABLED', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
    expect(CONFIG_VARIABLES.filter((name) => !table.has(name))).toEqual([]);
    expect(documented.filter((name) => !CONFIG_VARIABLES.includes(name))).toEqual([]);
    expect(CONFIG_VARIABLES.length).toBeGreaterThan(30);
  });

  it('regression: the README opens with a quickstart of at most 10 lines, and holds no settings table (74 lines and 40 rows stood before its first prompt)', async () => {
    const readme = await read('README.md');
    const lines = readme.split('\n');
    expect(lines[0]).toBe('# context-compiler');
    const fence = lines.indexOf('```sh');
    expect(fence).toBe(2);
    const close = lines.indexOf('```', fence + 1);
    expect(close - fence - 1).toBeLessThanOrEqual(10);
    const quickstart = lines.slice(fence + 1, close).join('\n');
    expect(quickstart).toContain("curl -s 'localhost:8080/context/mars?format=text'");
    expect(quickstart).toContain('http://localhost:8080/ui/');
    expect(quickstart).toContain('npx context-compiler compile --persona');
    expect(tableVariables(readme)).toEqual([]);
    expect(readme).toContain('[configuration](docs/configuration.md)');
  });
});
