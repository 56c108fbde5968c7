import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The examples import the client package by name, as a voice server does (tsconfig.json's paths for tsc and tsx).
const resolve = { alias: { '@context-compiler/client': fileURLToPath(new URL('./packages/client/src/index.ts', import.meta.url)) } };

/**
 * Test files that run in one process and hold no store across files: a worker runs them one
 * after another without a fresh process and module graph for each (`isolate: false`). Each
 * file imported the app's modules again, about a second of CPU; measured under load on
 * test/core, test/http and test/sources together, isolated: 111 s user + 23 s sys; not: 69 s
 * + 10 s. What a test made is undone after it by the setup file, not by a hook in a helper
 * module (one a shared worker would register for its first file only): a helper's per-file
 * need, such as dist/ built before a file starts the server or the CLI, is registered with
 * `beforeEveryFile` and run by the same setup file.
 */
const IN_PROCESS = ['test/**/*.test.ts'];
/**
 * Each in a fresh process: the files that share the PostgreSQL cluster's databases through
 * the trace-store contract, mock a module (test/sources/persona.test.ts's vi.mock of
 * live-context is only seen by a fresh module graph), keep module state of their own
 * (tokenizer.test.ts measures the tokenizer's memo in a heap with gc exposed), pack and
 * install the client with npm, or drive Chromium. A file that only starts children of its own
 * (the trace store's crash and restart children, a server, the example voice server) runs in
 * process: a fresh process costs its file a second or two of CPU to load the app's modules again.
 */
const OWN_PROCESS = [
  'test/tokenizer.test.ts',
  'test/io/trace/{contract,postgres}.test.ts',
  'test/sources/persona.test.ts',
  'test/routes/trace-postgres.test.ts',
  'test/client/package.test.ts',
  'test/ui/*.browser.test.ts',
];

const test = {
  environment: 'node' as const,
  testTimeout: 60_000,
  hookTimeout: 120_000,
  pool: 'forks' as const,
  // vitest's default is one worker per core but one, so a single worker on 2 cores. Many files wait
  // on a child process, a socket or a timer, and a core idles meanwhile: three at least. On 2 cores
  // (`npx vitest run`, quiet, sampled every 2 s) two workers kept 1.83 cores busy, 218.6 s; three
  // kept 1.98 busy, 209.5 s, for 9 s more CPU (the third worker loads the app's modules too).
  maxWorkers: Math.max(3, availableParallelism() - 1),
  setupFiles: ['test/helpers/cleanups-setup.ts'],
};

export default defineConfig({
  resolve,
  test: {
    ...test,
    // The run's temporary files on a tmpfs when there is one with room (first: the others make files);
    // one throwaway PostgreSQL cluster for the suites that hold the PostgreSQL backend to the trace-store contract,
    // and the Chromium the browser tests drive: each skipped with a line saying why, and required under CI=true.
    // Set up once, by the root project, whose provided values every project reads.
    globalSetup: ['test/helpers/tmpdir-setup.ts', 'test/helpers/postgres-setup.ts', 'test/helpers/chromium-setup.ts'],
    projects: [
      { resolve, test: { ...test, name: 'in-process', include: IN_PROCESS, exclude: OWN_PROCESS, isolate: false } },
      { resolve, test: { ...test, name: 'isolated', include: OWN_PROCESS } },
    ],
  },
});
