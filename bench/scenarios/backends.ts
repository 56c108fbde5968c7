import { fmt, out, printTable } from '../lib/format.js';
import type { RouteKey } from '../lib/knobs.js';
import { BenchError, onCleanUp, stopChild } from '../lib/processes.js';
import { buildTargets, problemSummary, send, traceCommits } from '../lib/requests.js';
import { startLikeServer, type Bench } from '../lib/servers.js';
import { measureWindow, type WindowResult } from '../lib/window.js';
import { createCluster, createDatabase, destroyCluster, findServerBinaries } from '../postgres-cluster.js';

// BENCH_TRACE=postgres: the same persona routes against a server tracing to PostgreSQL.

export interface BackendComparison {
  /** The database runs on this machine too: its CPU competes with the server's. */
  database: string;
  routes: Array<{ key: RouteKey; label: string; files: WindowResult; postgres: WindowResult }>;
}

/** A throwaway local cluster, destroyed when the run ends: its version and a database's URL. */
export async function startPostgres(database: string): Promise<{ version: string; port: number; url: string }> {
  const bin = findServerBinaries();
  if (!bin) throw new BenchError('BENCH_TRACE=postgres needs the PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)');
  const cluster = await createCluster(bin);
  onCleanUp(() => destroyCluster(cluster));
  return { version: /\/(\d+)\/bin$/.exec(bin)?.[1] ?? '?', port: cluster.port, url: await createDatabase(cluster.url, database) };
}

/** The persona routes on both backends, in alternating windows of the same run. */
export async function compareBackends(bench: Bench): Promise<BackendComparison> {
  const { knobs, token, brain, encoding } = bench;
  process.stdout.write('postgres: starting a throwaway cluster … ');
  const { version, port: databasePort, url } = await startPostgres('cc_bench');
  out(`PostgreSQL ${version} on 127.0.0.1:${databasePort} (initdb in a temporary directory, defaults but for max_connections)`);
  const server = await startLikeServer(bench, { TRACE_DIR: undefined, TRACE_DATABASE_URL: url });
  const personas = knobs.BENCH_ROUTES.filter((key) => key === 'mars' || key === 'venus');
  const routes: BackendComparison['routes'] = [];
  const forFiles = buildTargets(bench.server.base, token, brain.manifest, personas, encoding);
  const forPostgres = buildTargets(server.base, token, brain.manifest, personas, encoding);
  for (const target of forPostgres) {
    const response = await send(target);
    if (response.status !== 200) throw new BenchError(`preflight on PostgreSQL traces: ${target.label} answered ${response.status} ${problemSummary(response.body) ?? ''}`);
  }
  const files = { pids: () => [bench.server.spawned.pid], commits: bench.server.measured.commits! };
  const postgres = { pids: () => [server.spawned.pid], commits: () => traceCommits(server.base, token) };
  for (const [i, key] of personas.entries()) {
    process.stdout.write(`[${key}] files traces … `);
    const onFiles = await measureWindow(i, forFiles[i]!, knobs, files);
    process.stdout.write(`${fmt.int(onFiles.requestsPerSecond)} req/s; PostgreSQL traces … `);
    const onPostgres = await measureWindow(i, forPostgres[i]!, knobs, postgres);
    out(`${fmt.int(onPostgres.requestsPerSecond)} req/s`);
    routes.push({ key, label: forFiles[i]!.label, files: onFiles, postgres: onPostgres });
    if (server.spawned.child.exitCode !== null) throw new BenchError(`the PostgreSQL-traced server exited; output:\n${server.spawned.tail()}`);
  }
  await stopChild(server.spawned, 20_000);
  return { database: `PostgreSQL ${version}, local, same machine`, routes };
}

export function printBackends(comparison: BackendComparison): void {
  out();
  out(`persona routes by trace backend (${comparison.database}; alternating windows of this run):`);
  const rows = [['route', 'files req/s', 'p99 ms', 'commits/req', '', 'postgres req/s', 'p99 ms', 'commits/req', 'CPU µs/req']];
  const commits = (value: number | null) => (value === null ? '—' : value.toFixed(3));
  for (const { label, files, postgres } of comparison.routes) {
    rows.push([
      label,
      fmt.int(files.requestsPerSecond),
      fmt.ms(files.latencyMs.p99),
      commits(files.commitsPerRequest),
      '',
      fmt.int(postgres.requestsPerSecond),
      fmt.ms(postgres.latencyMs.p99),
      commits(postgres.commitsPerRequest),
      postgres.serverCpuUsPerRequest === null ? '' : `${fmt.int(postgres.serverCpuUsPerRequest)} (node only)`,
    ]);
  }
  printTable(rows);
}
