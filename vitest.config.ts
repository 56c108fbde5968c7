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
 * Each in a fresh process: the files that mock a module (test/sources/persona.test.ts's vi.mock
 * of live-context is only seen by a fresh module graph) or keep module state of their own
 * (tokenizer.test.ts measures the tokenizer's memo in a heap with gc exposed). Every other file
 * runs in process, those that start children of their own (servers, the trace store's crash and
 * restart children, npm, Chromium) and those on the PostgreSQL cluster among them (each takes
 * databases of its own, closed by its own afterAll): a fresh process costs its file a second or
 * two of CPU to load the app's modules again, and on a machine without PostgreSQL the trace-store
 * contract, its PostgreSQL suite and the PostgreSQL route test paid it only to skip.
 */
const OWN_PROCESS = [
  'test/tokenizer.test.ts',
  'test/sources/persona.test.ts',
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
