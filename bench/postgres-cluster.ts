import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './lib/processes.js';

/**
 * Throwaway PostgreSQL clusters for the tests and `BENCH_TRACE=postgres npm run bench`:
 * `initdb` in a temporary directory, listening
 * on loopback only at a free port, its unix socket in that directory, password
 * authentication over TCP. As root (CI containers), the server runs as the `postgres`
 * user, which owns the directory. Debian's server binaries (`apt-get install postgresql`)
 * live in /usr/lib/postgresql/<version>/bin, off PATH.
 */

const run = promisify(execFile);

export interface ClusterInfo {
  /** Superuser URL of the `postgres` database (loopback TCP, with the password). */
  url: string;
  host: string;
  port: number;
  user: string;
  password: string;
  dir: string;
  bin: string;
  /** Run the server as this user (root cannot). */
  runAs: string | null;
  /** Whether the server fsyncs what it commits (`ClusterOptions.fsync`). */
  fsync: boolean;
}

export interface ClusterOptions {
  /**
   * `false` runs the server with `fsync=off`: a commit still reaches the kernel before it is
   * acknowledged, so a crash of the server (`stopCluster(…, 'immediate')`, a killed backend)
   * loses nothing; only a crash of the machine could. The tests' clusters, which never see one,
   * use it: side by side, a migration took 73 ms instead of 119, twenty commits 49 ms instead of
   * 97, a database's drop 32 ms instead of 80. The bench keeps the default, so its figures are
   * those of a durable server.
   */
  fsync?: boolean;
}

/** The newest Debian server binaries, or null when the server is not installed. */
export function findServerBinaries(root = '/usr/lib/postgresql'): string | null {
  let versions: string[];
  try {
    versions = readdirSync(root).filter((name) => /^\d+$/.test(name));
  } catch {
    return null;
  }
  for (const version of versions.sort((a, b) => Number(b) - Number(a))) {
    const bin = join(root, version, 'bin');
    if (existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl'))) return bin;
  }
  return null;
}

async function as(info: Pick<ClusterInfo, 'runAs'>, command: string, args: string[]): Promise<void> {
  if (info.runAs) await run('runuser', ['-u', info.runAs, '--', command, ...args], { timeout: 60_000 });
  else await run(command, args, { timeout: 60_000 });
}

/** Creates a cluster (initdb) and starts it; stop it with `stopCluster`. */
export async function createCluster(bin: string, options: ClusterOptions = {}): Promise<ClusterInfo> {
  const runAs = userInfo().uid === 0 ? 'postgres' : null;
  const dir = await mkdtemp(join(tmpdir(), 'cc-pg-'));
  const password = randomBytes(12).toString('hex');
  const pwfile = join(dir, 'pwfile');
  await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
  if (runAs) {
    const { stdout } = await run('id', ['-u', runAs]);
    const { stdout: gid } = await run('id', ['-g', runAs]);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
    await chown(pwfile, Number(stdout.trim()), Number(gid.trim()));
  }
  const info: ClusterInfo = { url: '', host: '127.0.0.1', port: 0, user: 'postgres', password, dir, bin, runAs, fsync: options.fsync ?? true };
  await as(info, join(bin, 'initdb'), [
    '-D', join(dir, 'data'),
    '-U', 'postgres',
    '--pwfile', pwfile,
    '--auth-host=scram-sha-256',
    '--auth-local=trust',
    '--encoding=UTF8',
    '--locale=C',
    '--no-instructions',
    // A throwaway cluster: initdb's own fsyncs guard only against a machine crash while it runs.
    '--no-sync',
  ]);
  await rm(pwfile, { force: true });
  info.port = await freePort();
  info.url = `postgres://postgres:${password}@127.0.0.1:${info.port}/postgres`;
  await startCluster(info);
  return info;
}

/** Starts (or restarts) the cluster's server and waits until it accepts connections. */
export async function startCluster(info: ClusterInfo): Promise<void> {
  const settings = [
    `-p ${info.port}`,
    "-c listen_addresses='127.0.0.1'",
    `-c unix_socket_directories='${info.dir}'`,
    '-c max_connections=300',
    '-c shared_buffers=32MB',
    '-c log_min_messages=warning',
    ...(info.fsync ? [] : ['-c fsync=off']),
  ].join(' ');
  await as(info, join(info.bin, 'pg_ctl'), ['-D', join(info.dir, 'data'), '-l', join(info.dir, 'server.log'), '-o', settings, '-w', '-t', '60', 'start']);
}

/** Stops the server: `fast` rolls back what is in flight and disconnects everyone; `immediate` is a crash. */
export async function stopCluster(info: ClusterInfo, mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
  await as(info, join(info.bin, 'pg_ctl'), ['-D', join(info.dir, 'data'), '-m', mode, '-w', '-t', '60', 'stop']);
}

/** Stops the server if it runs, and removes the cluster. */
export async function destroyCluster(info: ClusterInfo): Promise<void> {
  await stopCluster(info, 'immediate').catch(() => undefined);
  await rm(info.dir, { recursive: true, force: true });
}

/** A new, empty database on the cluster; returns its URL. */
export async function createDatabase(clusterUrl: string, prefix = 'cc_test'): Promise<string> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: clusterUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(clusterUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops a database made by `createDatabase`, disconnecting whoever is still on it. */
export async function dropDatabase(clusterUrl: string, databaseUrl: string): Promise<void> {
  const name = new URL(databaseUrl).pathname.slice(1);
  if (!/^[a-z0-9_]+$/.test(name)) throw new Error(`not a test database: ${name}`);
  const client = new pg.Client({ connectionString: clusterUrl });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}
