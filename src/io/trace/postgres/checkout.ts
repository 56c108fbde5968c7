import type { Pool, PoolClient } from 'pg';

/**
 * Runs `work` on a connection checked out of `pool`, and gives it back — to be discarded if
 * anything failed. While it is checked out, an error the connection raises outside a
 * statement is caught here: the server ending a session (a fast shutdown, a failover) can
 * send its FATAL in the same packet as the answer to the last statement, after the statement
 * has settled, and pg emits that as an `error` event, which would otherwise end the process.
 * The work's own result stands: what the server acknowledged before the connection broke was
 * acknowledged.
 */
export async function withConnection<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken ??= error;
  };
  client.on('error', onError);
  try {
    return await work(client);
  } catch (error) {
    broken ??= error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}
