import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir, TEST_TOKEN } from './helpers/app.js';
import { startServer } from './helpers/server-process.js';

describe('server process', () => {
  it('exits non-zero naming PORT when PORT is not a port', async () => {
    const server = startServer({ PORT: 'notaport' });
    expect(await server.exited).not.toBe(0);
    expect(server.output().stderr).toContain('PORT');
  });

  it('refuses to bind a public address without tokens', async () => {
    const server = startServer({ HOST: '0.0.0.0', PORT: '0' });
    expect(await server.exited).not.toBe(0);
    expect(server.output().stderr).toContain('CONTEXT_COMPILER_TOKENS');
  });

  it('refuses to start (exit 78, naming it) when TRACE_SIGNING_KEY_FILE holds no key', async () => {
    const file = join(await tempDir(), 'trace-key');
    await writeFile(file, '\n');
    const server = startServer({ PORT: '0', TRACE_SIGNING_KEY_FILE: file });
    expect(await server.exited).toBe(78);
    expect(server.output().stderr).toContain(`TRACE_SIGNING_KEY_FILE: ${file} holds no key`);
  });

  it('serves the probes and exits 0 on SIGTERM', async () => {
    const traces = join(await tempDir(), 'traces');
    const server = startServer({ PORT: '0', TRACE_DIR: traces, CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const port = await server.listening();
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
    expect(ready.status).toBe(200);
    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
    expect(server.output().stdout).not.toContain(TEST_TOKEN);
  });
});
