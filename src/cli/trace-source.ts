import { pino } from 'pino';
import type { RunsQuery } from '../client.js';
import { databaseLocation, loadConfig } from '../config.js';
import type { RunList, RunTrace } from '../../schemas/trace.js';

/**
 * Where `trace`, `runs` and `diff` read runs from: a running service (`--url`, else
 * `CONTEXT_COMPILER_URL` unless `--dir` is given) or the trace store itself (`--dir`, else
 * the configured `TRACE_DATABASE_URL` or `TRACE_DIR`). Its `name` says which, so every
 * answer — "no run x" included — names the store it looked in.
 */
export interface TraceSource {
  /** `trace files in /var/traces (TRACE_DIR)`, `the service at http://…`, `the PostgreSQL trace database db on host:5432 (TRACE_DATABASE_URL)`. */
  readonly name: string;
  readonly remote: boolean;
  /** A page of a run; null when the source has no such run (or none the caller may read). */
  readRun(runId: string, page: { limit: number; cursor?: string; verifySources?: boolean }): Promise<RunTrace | null>;
  listRuns(query: RunsQuery): Promise<RunList>;
  close(): Promise<void>;
}

export class TraceSourceUsageError extends Error {}

export async function openTraceSource(options: { dir?: string | undefined; url?: string | undefined }, env: NodeJS.ProcessEnv): Promise<TraceSource> {
  if (options.dir !== undefined && options.url !== undefined) {
    throw new TraceSourceUsageError('--dir reads trace files and --url asks a running service: give one of them');
  }
  // An explicit --dir beats a service URL that is only in the environment.
  const url = options.url ?? (options.dir === undefined ? env['CONTEXT_COMPILER_URL'] : undefined);
  if (url) {
    // The HTTP client (undici) only for a service, as the store only for a store.
    const { ContextCompilerError, createClient } = await import('../client.js');
    const client = createClient({ baseUrl: url, ...(env['CONTEXT_COMPILER_TOKEN'] ? { token: env['CONTEXT_COMPILER_TOKEN'] } : {}) });
    return {
      name: `the service at ${url}${options.url === undefined ? ' (CONTEXT_COMPILER_URL)' : ''}`,
      remote: true,
      async readRun(runId, page) {
        try {
          return (await client.trace(runId, { verifySources: page.verifySources === true, limit: page.limit, ...(page.cursor === undefined ? {} : { cursor: page.cursor }) })) as RunTrace;
        } catch (error) {
          if (error instanceof ContextCompilerError && error.status === 404) return null;
          throw error;
        }
      },
      listRuns: async (query) => (await client.runs(query)) as RunList,
      close: () => client.close(),
    };
  }
  const { createTraceStoreFromConfig } = await import('../io/trace/index.js');
  // --dir reads trace files even where the service is configured for a database.
  const config = loadConfig({ ...env, ...(options.dir ? { TRACE_DIR: options.dir, TRACE_DATABASE_URL: '', TRACE_DATABASE_URL_FILE: '' } : {}) });
  const store = createTraceStoreFromConfig(config, pino({ level: 'silent' }));
  let name: string;
  if (config.traceDatabaseUrl === null) name = `trace files in ${config.traceDir}${options.dir === undefined ? ' (TRACE_DIR)' : ''}`;
  else {
    // Where the database is, never who logs in to it or how.
    const { database, databaseHost, databasePort } = databaseLocation(config.traceDatabaseUrl);
    name = `the PostgreSQL trace database ${database ?? '(default)'} on ${databaseHost}${databasePort === null ? '' : `:${databasePort}`} (TRACE_DATABASE_URL)`;
  }
  return {
    name,
    remote: false,
    // The person at the store's files or database reads every caller's runs.
    readRun: async (runId, page) => (await store.readRun(runId, { limit: page.limit, ...(page.cursor === undefined ? {} : { cursor: page.cursor }) })) as RunTrace | null,
    listRuns: async (query) => (await store.listRuns(query)) as RunList,
    close: () => store.close(),
  };
}
