/**
 * vitest globalSetup: one throwaway PostgreSQL cluster for every PostgreSQL suite of the
 * run (each test makes its own database on it). Without the server binaries the suites
 * are skipped, and say so; under CI=true their absence fails the run instead, so CI can
 * never pass without having run them.
 */
import type { TestProject } from 'vitest/node';
import { createCluster, destroyCluster, findServerBinaries, type ClusterInfo } from './postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The shared cluster's superuser URL, or why the PostgreSQL suites are skipped. */
    postgres: { url: string; bin: string } | { skipped: string };
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const bin = findServerBinaries();
  if (!bin) {
    const reason = 'no PostgreSQL server binaries in /usr/lib/postgresql/*/bin (apt-get install postgresql)';
    if (process.env['CI'] === 'true') throw new Error(`CI=true requires the PostgreSQL suites to run, but there are ${reason}`);
    process.stderr.write(`\nPostgreSQL suites SKIPPED: ${reason}.\n\n`);
    project.provide('postgres', { skipped: reason });
    return async () => undefined;
  }
  // No test crashes the machine, only the server or the service: commits need not wait for the disk.
  const cluster: ClusterInfo = await createCluster(bin, { fsync: false });
  project.provide('postgres', { url: cluster.url, bin });
  return () => destroyCluster(cluster);
}
