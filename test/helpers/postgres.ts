/** Throwaway PostgreSQL clusters for the tests; the code is the bench's (bench/postgres-cluster.ts), which needs it too. */
import pg from 'pg';
import { createDatabase, dropDatabase } from '../../bench/postgres-cluster.js';

export * from '../../bench/postgres-cluster.js';

/**
 * What a test could leave behind in a database, beyond the rows of its tables: every schema
 * but the system's (owner, privileges, comment), the objects in them, the database's own
 * settings and privileges, and its extensions. A fresh database and an emptied one agree on it.
 */
const FINGERPRINT = `
  WITH mine AS (SELECT oid, nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema')
  SELECT json_build_object(
    'schemas', (SELECT json_agg(json_build_object('name', n.nspname, 'owner', n.nspowner::regrole::text, 'acl', n.nspacl::text, 'comment', obj_description(n.oid, 'pg_namespace')) ORDER BY n.nspname)
                FROM pg_namespace n JOIN mine USING (oid)),
    'relations', (SELECT count(*) FROM pg_class WHERE relnamespace IN (SELECT oid FROM mine)),
    'types', (SELECT count(*) FROM pg_type WHERE typnamespace IN (SELECT oid FROM mine)),
    'routines', (SELECT count(*) FROM pg_proc WHERE pronamespace IN (SELECT oid FROM mine)),
    'settings', (SELECT count(*) FROM pg_db_role_setting WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())),
    'acl', (SELECT datacl::text FROM pg_database WHERE datname = current_database()),
    'extensions', (SELECT json_agg(extname ORDER BY extname) FROM pg_extension),
    'eventTriggers', (SELECT count(*) FROM pg_event_trigger)
  )::text AS fingerprint`;

/** Ends every other session on the database, resets its settings and makes its public schema anew, as template1 has it. */
const EMPTY = `
  SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid();
  DO $$ BEGIN EXECUTE format('ALTER DATABASE %I RESET ALL', current_database()); END $$;
  DROP SCHEMA public CASCADE;
  CREATE SCHEMA public AUTHORIZATION pg_database_owner;
  GRANT USAGE ON SCHEMA public TO PUBLIC;
  COMMENT ON SCHEMA public IS 'standard public schema';`;

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  // A test may have left the database read-only by default (`ALTER DATABASE … SET default_transaction_read_only`).
  const client = new pg.Client({ connectionString: url, options: '-c default_transaction_read_only=off' });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

const fingerprint = (client: pg.Client) => client.query<{ fingerprint: string }>(FINGERPRINT).then((result) => result.rows[0]!.fingerprint);

/**
 * Empty databases for the tests of one file, one test at a time each: a database a test gave
 * back is emptied and checked against the fingerprint of a fresh one before the next test gets
 * it, and dropped instead when the two differ. `CREATE DATABASE` copies template1 (7.5 MB) and
 * cost 80–280 ms of server CPU with its drop, the emptying about 3 ms; a suite makes a hundred.
 */
export class TestDatabases {
  private readonly free: string[] = [];
  private fresh: string | null = null;

  constructor(private readonly clusterUrl: string) {}

  /** An empty database's URL: one given back, emptied, or a new one. */
  async take(): Promise<string> {
    const reused = this.free.pop();
    if (reused) return reused;
    const url = await createDatabase(this.clusterUrl);
    this.fresh ??= await withClient(url, fingerprint);
    return url;
  }

  /** The test is done with the database (its own connections closed): emptied for the next test, or dropped. */
  async give(url: string): Promise<void> {
    const emptied = await withClient(url, async (client) => {
      await client.query(EMPTY);
      return (await fingerprint(client)) === this.fresh;
    }).catch(() => false);
    if (emptied) this.free.push(url);
    else await dropDatabase(this.clusterUrl, url);
  }

  /** Drops the databases no test holds. */
  async close(): Promise<void> {
    for (const url of this.free.splice(0)) await dropDatabase(this.clusterUrl, url);
  }
}
