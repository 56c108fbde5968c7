import type { Pool } from 'pg';
import { TraceDatabaseError } from './failure.js';
import { withConnection } from './checkout.js';

/**
 * The trace tables, created and migrated at start, idempotently, under a transaction-level
 * advisory lock so that replicas starting together do not race (`CREATE TABLE IF NOT
 * EXISTS` alone does not make concurrent creation safe); `context-compiler migrate` runs
 * the same by hand. A database already at the latest version is only read, so the service
 * also runs as a role without DDL rights once an operator has migrated.
 *
 * - `cc_trace_segments`: one row per chain segment (a writer's file, in the files backend):
 *   its chained header, and its head — the last event committed, bound by a MAC.
 * - `cc_trace_events`: one row per event, chained; looked up by run (`run_id, at_ms`),
 *   deleted by age (`at_ms`), walked by chain position (`segment, seq`).
 * - `cc_trace_runs`: each run's latest event, upserted with it, so `GET /runs` filters and
 *   pages through indexes instead of grouping events. Both tables name the event's caller
 *   (version 2), so one caller's runs and events are read without the others'. Version 3
 *   adds what the list shows (the minute compiled for, topic, role, engine, warnings) and
 *   each event's request id and trace id, indexed, so a run is found from a log line.
 * - `cc_trace_records`: prompt texts (`kind` text, stored as a JSON string, so any text —
 *   a NUL, a lone surrogate — round-trips) and repeated structures (`kind` json: block
 *   summaries, source records, cache plans, tool definitions), stored once per UTC day by sha256 (insert on
 *   conflict do nothing), so a day's records are deleted with that day's events.
 */
const MIGRATIONS: ReadonlyArray<{ version: number; statements: readonly string[] }> = [
  {
    version: 1,
    statements: [
      `CREATE TABLE cc_trace_segments (
        segment text COLLATE "C" PRIMARY KEY,
        writer text NOT NULL,
        seq integer NOT NULL,
        created_ms bigint NOT NULL,
        prev_segment text COLLATE "C",
        header text NOT NULL,
        prev text NOT NULL,
        link text NOT NULL,
        last_seq bigint NOT NULL DEFAULT 0,
        last_link text NOT NULL,
        head text NOT NULL,
        newest_ms bigint NOT NULL,
        probed_ms bigint
      )`,
      'CREATE INDEX cc_trace_segments_prev ON cc_trace_segments (prev_segment)',
      'CREATE INDEX cc_trace_segments_newest ON cc_trace_segments (newest_ms)',
      `CREATE TABLE cc_trace_events (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        segment text COLLATE "C" NOT NULL,
        seq bigint NOT NULL,
        run_id text COLLATE "C" NOT NULL,
        at_ms bigint NOT NULL,
        body text NOT NULL,
        prev text NOT NULL,
        link text NOT NULL,
        UNIQUE (segment, seq)
      )`,
      'CREATE INDEX cc_trace_events_run ON cc_trace_events (run_id, at_ms, id)',
      'CREATE INDEX cc_trace_events_at ON cc_trace_events (at_ms)',
      `CREATE TABLE cc_trace_runs (
        run_id text COLLATE "C" PRIMARY KEY,
        at_ms bigint NOT NULL,
        event_id bigint NOT NULL,
        at text NOT NULL,
        route text NOT NULL,
        subject_kind text NOT NULL,
        subject_id text COLLATE "C" NOT NULL,
        surface text,
        status integer NOT NULL,
        outcome text NOT NULL,
        chars integer NOT NULL,
        prompt_sha256 text
      )`,
      'CREATE INDEX cc_trace_runs_recent ON cc_trace_runs (at_ms DESC, run_id DESC)',
      'CREATE INDEX cc_trace_runs_subject ON cc_trace_runs (subject_kind, subject_id, at_ms DESC, run_id DESC)',
      'CREATE INDEX cc_trace_runs_status ON cc_trace_runs (status, at_ms DESC, run_id DESC)',
      'CREATE INDEX cc_trace_runs_outcome ON cc_trace_runs (outcome, at_ms DESC, run_id DESC)',
      `CREATE TABLE cc_trace_records (
        day integer NOT NULL,
        sha256 text COLLATE "C" NOT NULL,
        kind text COLLATE "C" NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (day, sha256, kind)
      )`,
    ],
  },
  {
    // The caller's name (never the token) beside the event it is in, so a run's events and
    // runs are read per caller through indexes; null on events recorded before it existed.
    version: 2,
    statements: [
      'ALTER TABLE cc_trace_events ADD COLUMN caller text COLLATE "C"',
      'ALTER TABLE cc_trace_runs ADD COLUMN caller text COLLATE "C"',
      'CREATE INDEX cc_trace_runs_caller ON cc_trace_runs (caller, at_ms DESC, run_id DESC)',
    ],
  },
  {
    // Finding a run (GET /runs): what the list shows of each run's latest event, and each
    // event's request id and trace id, so a run is found from a log line through an index.
    // Null on rows written before (runs list them without those fields; the partial indexes
    // hold only rows that have an id, so building them on an old table reads it once).
    version: 3,
    statements: [
      'ALTER TABLE cc_trace_events ADD COLUMN request_id text COLLATE "C", ADD COLUMN trace_id text COLLATE "C"',
      'CREATE INDEX cc_trace_events_request ON cc_trace_events (request_id) WHERE request_id IS NOT NULL',
      'CREATE INDEX cc_trace_events_trace ON cc_trace_events (trace_id) WHERE trace_id IS NOT NULL',
      `ALTER TABLE cc_trace_runs ADD COLUMN compiled_for text, ADD COLUMN topic_id text, ADD COLUMN role text, ADD COLUMN engine text,
        ADD COLUMN warnings integer NOT NULL DEFAULT 0, ADD COLUMN request_id text, ADD COLUMN traceparent text`,
    ],
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** One key for every context-compiler process: `pg_advisory_xact_lock` serialises migrations. */
const MIGRATION_LOCK = '7305872543210417';

/** The version the database is at; 0 when the trace tables were never created. */
export async function schemaVersion(pool: Pool): Promise<number> {
  try {
    const { rows } = await pool.query<{ version: number | null }>('SELECT max(version) AS version FROM cc_trace_schema');
    return rows[0]?.version ?? 0;
  } catch (error) {
    if ((error as { code?: string }).code === '42P01') return 0;
    throw error;
  }
}

/**
 * Brings the schema to `SCHEMA_VERSION`: applies the missing migrations in one
 * transaction under the advisory lock, each recorded in `cc_trace_schema`. Returns the
 * versions applied (none when it was current). A database at a newer version than this
 * release knows is refused: a rolled-back deployment must not write to tables it does not
 * understand.
 */
export async function migrate(pool: Pool): Promise<{ version: number; applied: number[] }> {
  const current = await schemaVersion(pool);
  if (current === SCHEMA_VERSION) return { version: current, applied: [] };
  tooNew(current);
  return withConnection(pool, async (client) => {
    try {
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1::bigint)', [MIGRATION_LOCK]);
      await client.query('CREATE TABLE IF NOT EXISTS cc_trace_schema (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
      // Read again under the lock: another replica may have migrated while this one waited.
      const { rows } = await client.query<{ version: number | null }>('SELECT max(version) AS version FROM cc_trace_schema');
      const version = rows[0]?.version ?? 0;
      tooNew(version);
      const applied: number[] = [];
      for (const migration of MIGRATIONS) {
        if (migration.version <= version) continue;
        for (const statement of migration.statements) await client.query(statement);
        await client.query('INSERT INTO cc_trace_schema (version) VALUES ($1)', [migration.version]);
        applied.push(migration.version);
      }
      await client.query('COMMIT');
      return { version: SCHEMA_VERSION, applied };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
  });
}

function tooNew(version: number): void {
  if (version > SCHEMA_VERSION) {
    throw new TraceDatabaseError('EMIGRATION', `the trace schema is at version ${version}, newer than this release's ${SCHEMA_VERSION}`);
  }
}
