import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, inject } from 'vitest';
import {
  createFileTraceStore,
  createPostgresTraceStore,
  type FileTraceStoreOptions,
  type PostgresTraceStoreOptions,
  type TraceLog,
  type TraceStore,
} from '../../src/io/trace/index.js';
import { tempDir } from './app.js';
import { afterThisTest } from './cleanups.js';
import { faultyFs } from './faulty-fs.js';
import { TestDatabases } from './postgres.js';

/**
 * The two trace backends behind one test surface, so one suite of trace-store behaviour
 * runs against both: a fresh store per test, other processes (replicas, restarts) on the
 * same storage, and what an attacker or an accident can do to the stored bytes.
 */

/** The options both backends take. */
export type CommonOptions = Pick<FileTraceStoreOptions & PostgresTraceStoreOptions, 'retentionMs' | 'now' | 'writerId' | 'signingKey' | 'retryIntervalMs' | 'rotateMs' | 'maxBatchEvents'>;

export interface TraceStorage {
  /** A store (a process) on this storage; closed after the test. */
  open(options?: Partial<CommonOptions>, log?: TraceLog): TraceStore;
  /** The environment that makes the service use this storage. */
  env: Record<string, string>;
  /** Every stored byte as text, to count or look for what was stored. */
  dump(): Promise<string>;
  /** Replaces text inside stored prompt texts and records (not events). */
  alterRecords(from: string, to: string): Promise<void>;
  /** Replaces text inside the stored event of `runId` itself. */
  alterEvent(runId: string, from: string, to: string): Promise<void>;
  /** Deletes the stored event of `runId`. */
  removeEvent(runId: string): Promise<void>;
  /** Cuts the stored event of `runId` short, as a partial write or a careless edit would. */
  cutEvent(runId: string): Promise<void>;
  /** From now on, writes fail (a full disk; a database that refuses writes); `repair` undoes it. */
  fail(): Promise<void>;
  repair(): Promise<void>;
}

export interface TraceBackend {
  name: 'files' | 'postgres';
  /** Why this backend's suites are skipped on this machine, or null. */
  skipped: string | null;
  storage(): Promise<TraceStorage>;
}

const DAY = 86_400_000;
const silent = pino({ level: 'silent' });
/** A store opened by a test is closed after it (test/helpers/cleanups.ts), before the temp directory it writes in is removed. */
function tracked(store: TraceStore): TraceStore {
  afterThisTest(() => store.close());
  return store;
}

const files: TraceBackend = {
  name: 'files',
  skipped: null,
  async storage() {
    const dir = join(await tempDir('cc-trace-'), 'traces');
    const faults = faultyFs();
    const names = async () => (await readdir(dir)).filter((name) => name.endsWith('.jsonl')).sort();
    const rewrite = async (edit: (text: string) => string) => {
      for (const name of await names()) {
        const path = join(dir, name);
        const text = await readFile(path, 'utf8');
        const edited = edit(text);
        if (edited !== text) await writeFile(path, edited);
      }
    };
    const editEventLine = (runId: string, edit: (line: string) => string) =>
      rewrite((text) =>
        text
          .split(/(?<=\n)/)
          .map((line) => (line.startsWith('{"t":"event"') && line.includes(`"runId":${JSON.stringify(runId)}`) ? edit(line) : line))
          .join(''),
      );
    return {
      env: { TRACE_DIR: dir },
      open: (options = {}, log = silent) => tracked(createFileTraceStore(dir, log, { retentionMs: 7 * DAY, fs: faults.fs, ...options })),
      dump: async () => (await Promise.all((await names()).map((name) => readFile(join(dir, name), 'utf8')))).join(''),
      alterRecords: (from, to) =>
        rewrite((text) =>
          text
            .split(/(?<=\n)/)
            .map((line) => (line.startsWith('{"t":"blob"') || line.startsWith('{"t":"data"') ? line.split(from).join(to) : line))
            .join(''),
        ),
      alterEvent: (runId, from, to) => editEventLine(runId, (line) => line.split(from).join(to)),
      removeEvent: (runId) => editEventLine(runId, () => ''),
      // A torn write: the line loses its end, newline included.
      cutEvent: (runId) => editEventLine(runId, (line) => line.slice(0, Math.floor(line.length / 2))),
      async fail() {
        faults.state.failWith = 'ENOSPC';
      },
      async repair() {
        faults.state.failWith = null;
      },
    };
  },
};

function postgresBackend(): TraceBackend {
  const provided = inject('postgres');
  const clusterUrl = 'url' in provided ? provided.url : null;
  // Each storage is an empty database of its own; one a test is done with is emptied for the next (`TestDatabases`).
  const databases = clusterUrl ? new TestDatabases(clusterUrl) : null;
  afterAll(() => databases?.close());
  return {
    name: 'postgres',
    skipped: 'skipped' in provided ? provided.skipped : null,
    async storage() {
      if (!clusterUrl || !databases) throw new Error('no PostgreSQL cluster');
      const url = await databases.take();
      const name = new URL(url).pathname.slice(1);
      const admin = new pg.Pool({ connectionString: url, max: 2 });
      const cluster = new pg.Pool({ connectionString: clusterUrl, max: 1 });
      // disconnectOthers() and emptying the database terminate this harness’s own idle connections
      // too (end() resolves before its connections have closed); a pool without an error
      // listener would throw that into the test run as an uncaught error.
      for (const pool of [admin, cluster]) pool.on('error', () => {});
      afterThisTest(async () => {
        await admin.end();
        await cluster.end();
        await databases.give(url);
      });
      const query = async (sql: string, params: unknown[] = []) => (await admin.query(sql, params)).rows;
      const disconnectOthers = () => cluster.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [name]);
      return {
        env: { TRACE_DATABASE_URL: url },
        open: (options = {}, log = silent) => tracked(createPostgresTraceStore(url, log, { retentionMs: 7 * DAY, ...options })),
        async dump() {
          const rows = await query(
            `SELECT string_agg(body, E'\\n') AS text FROM (
               SELECT body FROM cc_trace_records UNION ALL SELECT body FROM cc_trace_events UNION ALL SELECT header FROM cc_trace_segments) AS stored`,
          ).catch(() => [{ text: '' }]);
          return String(rows[0]?.text ?? '');
        },
        async alterRecords(from, to) {
          await query('UPDATE cc_trace_records SET body = replace(body, $1, $2) WHERE strpos(body, $1) > 0', [from, to]);
        },
        async alterEvent(runId, from, to) {
          await query('UPDATE cc_trace_events SET body = replace(body, $2, $3) WHERE run_id = $1', [runId, from, to]);
        },
        async removeEvent(runId) {
          await query('DELETE FROM cc_trace_events WHERE run_id = $1', [runId]);
        },
        async cutEvent(runId) {
          await query('UPDATE cc_trace_events SET body = left(body, length(body) / 2) WHERE run_id = $1', [runId]);
        },
        async fail() {
          // What a failover to a standby, or a database put in read-only mode, looks like to the service.
          await cluster.query(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
          await disconnectOthers();
        },
        async repair() {
          await cluster.query(`ALTER DATABASE ${name} RESET default_transaction_read_only`);
          await disconnectOthers();
        },
      };
    },
  };
}

/** Both backends; the PostgreSQL one says why it is skipped on a machine without the server. */
export function traceBackends(): TraceBackend[] {
  return [files, postgresBackend()];
}

/** The PostgreSQL cluster of this run (superuser URL), or null with the reason the suites are skipped. */
export function postgresCluster(): { url: string; bin: string; skipped: null } | { url: null; bin: null; skipped: string } {
  const provided = inject('postgres');
  return 'url' in provided ? { url: provided.url, bin: provided.bin, skipped: null } : { url: null, bin: null, skipped: provided.skipped };
}
