import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // The examples import the client package by name, as a voice server does (tsconfig.json's paths for tsc and tsx).
  resolve: { alias: { '@context-compiler/client': fileURLToPath(new URL('./packages/client/src/index.ts', import.meta.url)) } },
  test: {
    include: ['test/**/*.test.ts'],
    environment: 'node',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // vitest's default is one worker per core but one, so a single worker on 2 cores: while it waits
    // on a child process, a socket or a timer, the other core would idle. Two at least.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // The run's temporary files on a tmpfs when there is one with room (first: the others make files);
    // one throwaway PostgreSQL cluster for the suites that hold the PostgreSQL backend to the trace-store contract,
    // and the Chromium the browser tests drive: each skipped with a line saying why, and required under CI=true.
    globalSetup: ['test/helpers/tmpdir-setup.ts', 'test/helpers/postgres-setup.ts', 'test/helpers/chromium-setup.ts'],
  },
});
