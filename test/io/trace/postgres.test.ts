import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pg from 'pg';
import { pino } from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createPostgresTraceStore, migrateTraceDatabase, type PostgresTraceStore, type PostgresTraceStoreOptions } from '../../../src/io/trace/index.js';
import { listRunsSql, RUN_EVENTS_SQL, RUN_STANDINGS_SQL } from '../../../src/io/trace/postgres/reader.js';
import { SCHEMA_VERSION } from '../../../src/io/trace/postgres/schema.js';
import { TestDatabases } from '../../helpers/postgres.js';
import { postgresCluster } from '../../helpers/trace-backends.js';
import { deliveredEvent, failedEvent } from '../../helpers/trace-events.js';

/** What only the PostgreSQL backend does: migrations, indexes, bounded reads and deletes, its credentials. */

const DAY = 86_400_000;
const cluster = postgresCluster();
const silent = pino({ level: 'silent' });
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** An empty database per test; one a test is done with is emptied for the next (`TestDatabases`). */
const databases = cluster.url === null ? null : new TestDatabases(cluster.url);
afterAll(() => databases?.close());

async function database(): Promise<{ url: string; query: <T = Record<string, unknown>>(sql: string, params?: unknown[]) => Promise<T[]> }> {
  const url = await databases!.take();
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  // Emptying the database terminates a connection pool.end() is still closing; its error is expected.
  pool.on('error', () => {});
  cleanups.push(async () => {
    await pool.end();
    await databases!.give(url);
  });
  return { url, query: async <T,>(sql: string, params: unknown[] = []) => (await pool.query(sql, params)).rows as T[] };
}

function open(url: string, options: Partial<PostgresTraceStoreOptions> = {}, log = silent): PostgresTraceStore {
  const store = createPostgresTraceStore(url, log, { retentionMs: 7 * DAY, ...options });
  cleanups.push(() => store.close());
  return store;
}

function capture() {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { log: pino({ level: 'debug' }, stream), text: () => text };
}

const title = (name: string) => (cluster.skipped ? `${name} (SKIPPED: ${cluster.skipped})` : name);


/** The trace tables as version 2 left them: without what version 3 added. */
async function downgradeToVersion2(query: (sql: string) => Promise<unknown>): Promise<void> {
  await query('DROP INDEX cc_trace_events_request');
  await query('DROP INDEX cc_trace_events_trace');
  await query('ALTER TABLE cc_trace_events DROP COLUMN request_id, DROP COLUMN trace_id');
  await query('ALTER TABLE cc_trace_runs DROP COLUMN compiled_for, DROP COLUMN topic_id, DROP COLUMN role, DROP COLUMN engine, DROP COLUMN warnings, DROP COLUMN request_id, DROP COLUMN traceparent');
  await query('DELETE FROM cc_trace_schema WHERE version = 3');
}

describe.skipIf(cluster.skipped !== null)(title('PostgreSQL trace backend'), () => {
  describe('schema', () => {
    it('is created once when replicas start together, under the advisory lock', async () => {
      const { url, query } = await database();
      const stores = Array.from({ length: 6 }, (_, i) => open(url, { writerId: `replica-${i}-0000` }));
      await Promise.all(stores.map((store) => store.health()));
      // Each migration recorded once, however many replicas raced to apply it.
      expect(await query('SELECT version FROM cc_trace_schema ORDER BY version')).toEqual(Array.from({ length: SCHEMA_VERSION }, (_, i) => ({ version: i + 1 })));
      await Promise.all(stores.map((store, i) => store.append(deliveredEvent(`run-${i}`))));
      expect((await stores[0]!.listRuns()).runs).toHaveLength(6);
    });

    it('is migrated by hand with context-compiler migrate’s function, idempotently', async () => {
      const { url, query } = await database();
      expect(await migrateTraceDatabase(url, silent)).toEqual({ version: SCHEMA_VERSION, applied: [1, 2, 3] });
      expect(await migrateTraceDatabase(url, silent)).toEqual({ version: SCHEMA_VERSION, applied: [] });
      expect(await query('SELECT count(*)::integer AS tables FROM pg_tables WHERE tablename LIKE $1', ['cc\\_trace\\_%'])).toEqual([{ tables: 5 }]);
    });

    it('migrates a version 1 database in place: its runs stay readable, to callers who read every run, and belong to nobody', async () => {
      const { url, query } = await database();
      const before = open(url, { writerId: 'release-1-0000' });
      await before.append(deliveredEvent('run-old'));
      await before.close();
      // The tables as version 1 left them: no caller columns, nothing version 3 added.
      await downgradeToVersion2(query);
      await query('DROP INDEX cc_trace_runs_caller');
      await query('ALTER TABLE cc_trace_runs DROP COLUMN caller');
      await query('ALTER TABLE cc_trace_events DROP COLUMN caller');
      await query('DELETE FROM cc_trace_schema WHERE version = 2');
      const after = open(url, { writerId: 'release-2-0000' });
      await after.health();
      expect(await query('SELECT max(version) AS version FROM cc_trace_schema')).toEqual([{ version: SCHEMA_VERSION }]);
      expect((await after.readRun('run-old'))!.events[0]!.verified).toBe(true);
      expect(await after.readRun('run-old', { visibleTo: 'voice' })).toBeNull();
      await after.append(deliveredEvent('run-old', { caller: 'voice' }));
      expect((await after.readRun('run-old', { visibleTo: 'voice' }))!.events.map((event) => event.caller)).toEqual(['voice']);
    });

    it('migrates a version 2 database in place: runs written before list without the new fields, new events are found by request and trace id', async () => {
      const { url, query } = await database();
      const before = open(url, { writerId: 'release-2-0000' });
      await before.append(deliveredEvent('run-v2', { requestId: 'req-v2' }));
      await before.close();
      await downgradeToVersion2(query);
      const after = open(url, { writerId: 'release-3-0000' });
      await after.health();
      expect(await query('SELECT max(version) AS version FROM cc_trace_schema')).toEqual([{ version: SCHEMA_VERSION }]);
      expect((await after.listRuns()).runs).toEqual([expect.objectContaining({ runId: 'run-v2', compiledFor: null, topicId: null, warnings: 0, events: 1 })]);
      // Written before request ids were indexed: not found by one (docs/traces.md says so).
      expect((await after.listRuns({ requestId: 'req-v2' })).runs).toEqual([]);
      const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
      await after.append(deliveredEvent('run-v3', { requestId: 'req-v3', traceparent, request: { nowUsed: '2026-11-30T17:30:00.000Z', topicId: 'garden', engine: 'gpt-4.1' } }));
      expect((await after.listRuns({ requestId: 'req-v3' })).runs).toEqual([
        expect.objectContaining({ runId: 'run-v3', requestId: 'req-v3', traceparent, compiledFor: '2026-11-30T17:30:00.000Z', topicId: 'garden', engine: 'gpt-4.1' }),
      ]);
      expect((await after.listRuns({ traceparent: '4bf92f3577b34da6a3ce929d0e0e4736' })).runs.map((run) => run.runId)).toEqual(['run-v3']);
      await after.close();
    });

    it('refuses a database at a newer schema version, and says so in readiness', async () => {
      const { url, query } = await database();
      await migrateTraceDatabase(url, silent);
      await query('INSERT INTO cc_trace_schema (version) VALUES ($1)', [SCHEMA_VERSION + 1]);
      const store = open(url);
      await expect(store.health()).rejects.toThrow(/trace database is unavailable \(TRACE_DATABASE_URL\): schema is newer than this release \(EMIGRATION\)/);
      await expect(store.append(deliveredEvent('run-1'))).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });
    });

    it('serves as a role without DDL rights once migrated', async () => {
      const { url, query } = await database();
      await migrateTraceDatabase(url, silent);
      const role = `cc_app_${randomBytes(4).toString('hex')}`;
      const password = randomBytes(12).toString('hex');
      const name = new URL(url).pathname.slice(1);
      await query(`CREATE ROLE ${role} LOGIN PASSWORD '${password}'`);
      cleanups.push(async () => {
        const admin = new pg.Client({ connectionString: cluster.url! });
        await admin.connect();
        await admin.query(`DROP ROLE IF EXISTS ${role}`).catch(() => undefined);
        await admin.end();
      });
      await query(`GRANT CONNECT ON DATABASE ${name} TO ${role}`);
      await query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ${role}`);
      await query(`REVOKE CREATE ON SCHEMA public FROM PUBLIC`);
      const limited = new URL(url);
      limited.username = role;
      limited.password = password;
      const store = open(limited.toString());
      await store.health();
      await store.append(deliveredEvent('run-limited'));
      expect((await store.readRun('run-limited'))!.events[0]!.verified).toBe(true);
      expect(await store.sweep()).toEqual({ deleted: 0 });
      await query(`REVOKE ALL ON ALL TABLES IN SCHEMA public FROM ${role}`);
      await query(`REVOKE CONNECT ON DATABASE ${name} FROM ${role}`);
    });
  });

  describe('reads and deletes through indexes, bounded', () => {
    it('reads a run and pages runs by index scans, not table scans', async () => {
      const { url, query } = await database();
      const store = open(url);
      const base = Date.now() - 3_600_000;
      for (let chunk = 0; chunk < 10; chunk++) {
        await Promise.all(
          Array.from({ length: 300 }, (_, i) => {
            const n = chunk * 300 + i;
            const at = new Date(base + n).toISOString();
            const correlation = { requestId: `req-${n}`, traceparent: `00-${n.toString(16).padStart(32, '0')}-00f067aa0ba902b7-01` };
            return n % 7 === 0
              ? store.append(failedEvent(`run-${n}`, { at, ...correlation }))
              : store.append(deliveredEvent(`run-${n % 1000}`, { at, ...correlation, subject: { kind: 'persona', id: n % 2 ? 'mars' : 'venus' } }));
          }),
        );
      }
      await query('ANALYZE');
      const plan = async (sql: string, params: unknown[]) => JSON.stringify(await query(`EXPLAIN (FORMAT JSON) ${sql}`, params));
      const minAt = base - 1;
      for (const params of [
        ['run-7', minAt, Number.MIN_SAFE_INTEGER, '0', 21, null],
        ['run-7', minAt, base + 100, '50', 101, 'voice'],
      ]) {
        const read = await plan(RUN_EVENTS_SQL, params);
        expect(read).toContain('cc_trace_events_run');
        expect(read).not.toContain('"Seq Scan"');
      }
      const standing = await plan(RUN_STANDINGS_SQL, [['run-7', 'run-8'], minAt, 10_000]);
      expect(standing).toContain('cc_trace_events_run');
      expect(standing).not.toContain('"Seq Scan"');
      for (const filter of [{}, { persona: 'mars' }, { status: 422 }, { outcome: 'failed' as const }, { visibleTo: 'voice' }]) {
        const { sql, params } = listRunsSql(filter, { atMs: base + 2000, runId: 'run-500' }, 20);
        const listed = await plan(sql, [minAt, ...params]);
        expect(listed, JSON.stringify(filter)).toMatch(/cc_trace_runs_(recent|subject|status|outcome|caller)/);
        expect(listed, JSON.stringify(filter)).not.toContain('"Seq Scan"');
      }
      // Finding a run: by its id, a request id or a trace id of any of its events, and by time — each through an index.
      for (const [filter, index] of [
        [{ runId: 'run-7' }, /cc_trace_runs_pkey|cc_trace_runs_recent/],
        [{ requestId: 'req-1234' }, /cc_trace_events_request/],
        [{ traceId: (1234).toString(16).padStart(32, '0') }, /cc_trace_events_trace/],
        [{ fromMs: base + 1000, toMs: base + 2000 }, /cc_trace_runs_recent/],
      ] as const) {
        const { sql, params } = listRunsSql(filter, null, 20);
        const listed = await plan(sql, [minAt, ...params]);
        expect(listed, JSON.stringify(filter)).toMatch(index);
        expect(listed, JSON.stringify(filter)).not.toContain('"Seq Scan"');
      }
      expect((await store.listRuns({ requestId: 'req-1234' })).runs.map((run) => run.runId)).toEqual(['run-234']);
    });

    it('pages through a run of more than 1,000 events, which the reader used to cut at 1,000', async () => {
      const { url } = await database();
      const store = open(url, { maxBatchEvents: 200 });
      await Promise.all(Array.from({ length: 1005 }, () => store.append(failedEvent('run-long'))));
      let cursor: string | undefined;
      let read = 0;
      do {
        const page = await store.readRun('run-long', { limit: 100, ...(cursor === undefined ? {} : { cursor }) });
        expect(page!.events.length).toBeLessThanOrEqual(100);
        expect(page!.chain.problems).toEqual([]);
        read += page!.events.length;
        cursor = page!.nextCursor ?? undefined;
      } while (cursor !== undefined);
      expect(read).toBe(1005);
      expect((await store.listRuns()).runs[0]).toMatchObject({ runId: 'run-long', events: 1005 });
    });

    it('deletes expired events in bounded batches while appends go on', async () => {
      const { url, query } = await database();
      let clock = Date.parse('2026-01-01T00:00:00.000Z');
      const store = open(url, { now: () => clock, maxBatchEvents: 500 });
      await Promise.all(Array.from({ length: 2500 }, (_, i) => store.append(failedEvent(`old-${i}`, { at: new Date(clock + i).toISOString() }))));
      clock += 8 * DAY;
      const appends = Array.from({ length: 200 }, (_, i) => store.append(deliveredEvent(`new-${i}`, { at: new Date(clock).toISOString() })));
      const [swept] = await Promise.all([store.sweep(), ...appends]);
      expect(swept).toEqual({ deleted: 2500 });
      expect(await query('SELECT count(*)::integer AS n FROM cc_trace_events')).toEqual([{ n: 200 }]);
      expect(await query('SELECT count(*)::integer AS n FROM cc_trace_runs')).toEqual([{ n: 200 }]);
      // Records of days wholly past retention go too; today's stay.
      expect(await query('SELECT count(*)::integer AS n FROM cc_trace_records WHERE day < $1', [Math.floor((clock - 7 * DAY) / DAY)])).toEqual([{ n: 0 }]);
      expect((await store.readRun('new-199'))!.events[0]!.verified).toBe(true);
      expect(store.stats().eventsDeleted).toBe(2500);
    });
  });

  describe('several writers', () => {
    it('upserts the runs two replicas append to at once, each run to its latest event', async () => {
      const { url } = await database();
      const base = Date.parse('2026-03-01T12:00:00.000Z');
      const a = open(url, { writerId: 'replica-a-0000', now: () => base + DAY });
      const b = open(url, { writerId: 'replica-b-0000', now: () => base + DAY });
      await Promise.all(
        Array.from({ length: 400 }, (_, i) => (i % 2 ? a : b).append(deliveredEvent(`run-${i % 50}`, { at: new Date(base + i).toISOString(), status: i >= 350 ? 304 : 200, outcome: i >= 350 ? 'not-modified' : 'delivered' }))),
      );
      const runs = (await a.listRuns({ limit: 100 })).runs;
      expect(runs).toHaveLength(50);
      expect(runs.every((run) => run.events === 8 && run.status === 304)).toBe(true);
      const run = await b.readRun('run-7');
      expect(run!.events.map((event) => event.at)).toEqual(Array.from({ length: 8 }, (_, k) => new Date(base + 7 + 50 * k).toISOString()));
      expect(run!.chain).toEqual({ status: 'linked', problems: [], notes: [] });
    });

    it('continues in a new segment when its own is removed under it, says so in readiness, and reports the removal', async () => {
      const { url, query } = await database();
      const { log, text } = capture();
      const store = open(url, {}, log);
      await store.append(deliveredEvent('before'));
      await query('DELETE FROM cc_trace_segments');
      await store.append(deliveredEvent('after'));
      expect(await store.health()).toMatch(/^the current trace segment was removed or changed in the database at .*; appends continue in a new segment$/);
      expect(text()).toContain('trace segment changed under the writer; continuing in a new segment');
      const after = await store.readRun('after');
      expect(after!.events.map((event) => event.verified)).toEqual([true]);
      const before = await store.readRun('before');
      expect(before!.chain.status).toBe('broken');
      expect(before!.chain.problems.join('\n')).toMatch(/its segment record is missing/);
      expect(before!.events.map((event) => event.verified)).toEqual([false]);
    });

    it('after a batch that failed, refers to no record that batch did not store (a shared result written again)', async () => {
      const { url, query } = await database();
      const store = open(url, { retryIntervalMs: 0 });
      await store.append(failedEvent('first'));
      // One compiled result, delivered again: the same blocks, segments and parts each time.
      const result = deliveredEvent('result');
      await query("ALTER TABLE cc_trace_events ADD CONSTRAINT cc_test_refuse CHECK (run_id <> 'refused')");
      await expect(store.append({ ...result, runId: 'refused' })).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });
      await query('ALTER TABLE cc_trace_events DROP CONSTRAINT cc_test_refuse');
      await store.health();
      for (const runId of ['after-1', 'after-2', 'after-3']) await store.append({ ...result, runId });
      for (const runId of ['after-1', 'after-2', 'after-3']) {
        const run = await store.readRun(runId);
        expect(run!.events.map((event) => [event.verified, event.blocks?.length, event.systemPrompt])).toEqual([[true, result.blocks!.length, result.segments!.system.join('')]]);
      }
      expect(await store.readRun('refused')).toBeNull();
    });

    it('reports a row added to a segment past the last event its writer committed', async () => {
      const { url, query } = await database();
      const store = open(url);
      await store.append(deliveredEvent('run-a'));
      await store.append(deliveredEvent('run-b'));
      const [row] = await query<{ segment: string; body: string; link: string }>("SELECT segment, body, link FROM cc_trace_events WHERE run_id = 'run-b'");
      const body = row!.body.replace('"seq":2', '"seq":3').replaceAll('run-b', 'run-x');
      const { createHash } = await import('node:crypto');
      const link = createHash('sha256').update(row!.link).update(body).digest('hex');
      await query('INSERT INTO cc_trace_events (segment, seq, run_id, at_ms, body, prev, link) VALUES ($1, 3, $2, $3, $4, $5, $6)', [row!.segment, 'run-x', Date.now(), body, row!.link, link]);
      const forged = await open(url).readRun('run-x');
      expect(forged!.events.map((event) => [event.verified, event.chain])).toEqual([[false, 'broken']]);
      expect(forged!.chain.problems.join('\n')).toMatch(/after the last event its writer committed/);
    });
  });

  describe('credentials', () => {
    it('never puts the database password in a log line, a readiness reason or a 503 detail', async () => {
      const { url } = await database();
      const wrong = new URL(url);
      const secret = `pw-${randomBytes(8).toString('hex')}`;
      wrong.password = secret;
      const { log, text } = capture();
      const store = open(wrong.toString(), { retryIntervalMs: 20 }, log);
      const reason = await store.health().then(
        () => 'healthy',
        (error: Error) => error.message,
      );
      expect(reason).toBe('trace database is unavailable (TRACE_DATABASE_URL): password authentication failed (28P01)');
      const problem = await store.append(deliveredEvent('run-1')).catch((error: { detail: string }) => error.detail);
      expect(problem).toMatch(/^The trace event could not be made durable: trace database is unavailable \(TRACE_DATABASE_URL\)/);

      const down = new URL(url);
      down.port = '1';
      down.password = secret;
      const unreachable = open(down.toString(), {}, log);
      await expect(unreachable.health()).rejects.toThrow('trace database is unavailable (TRACE_DATABASE_URL): connection refused (ECONNREFUSED)');
      await unreachable.append(deliveredEvent('run-2')).catch(() => undefined);
      expect(text()).toContain('trace store cannot make events durable');
      for (const leaked of [secret, wrong.toString(), down.toString(), '127.0.0.1:1']) {
        expect(text()).not.toContain(leaked);
        expect(reason).not.toContain(leaked);
        expect(problem).not.toContain(leaked);
      }
    });
  });
});

describe.skipIf(cluster.skipped !== null)(title('a connection the server ends while it is checked out'), () => {
  it('fails the checkout, not the process, and the connection is discarded (the CI crash when the database stopped under load)', async () => {
    const { url, query } = await database();
    const pool = new pg.Pool({ connectionString: url, max: 1 });
    pool.on('error', () => {});
    cleanups.push(() => pool.end());
    const { withConnection } = await import('../../../src/io/trace/postgres/checkout.js');
    const answer = await withConnection(pool, async (client) => {
      const [{ pid }] = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows as [{ pid: number }];
      // The server ends the session between statements: its FATAL reaches a connection with no
      // statement in flight, which pg reports as an `error` event (uncaught, it ends the process).
      const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
      await query('SELECT pg_terminate_backend($1)', [pid]);
      await ended;
      return pid;
    });
    expect(answer).toBeGreaterThan(0);
    expect(pool.totalCount).toBe(0);
    // The pool opens a fresh connection for the next caller.
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });
});
