/** Throwaway PostgreSQL clusters for the tests; the code is the bench's (bench/postgres-cluster.ts), which needs it too. */
export * from '../../bench/postgres-cluster.js';
