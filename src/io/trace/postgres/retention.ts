import { SEAL_GRACE_MS } from '../store.js';
import { DAY_MS, type DatabaseContext, type DatabaseWriter } from './writer.js';

/** Rows deleted per statement: each delete is short, so appends and other replicas' deletes never wait long. */
const DELETE_BATCH = 1000;
/** At most this many statements per table and sweep; the next sweep continues. */
const MAX_BATCHES = 200;

/**
 * Retention on PostgreSQL, in bounded batches (each its own short transaction, by index):
 * events older than the retention, runs whose latest event is, records of days before the
 * oldest day still kept, and segments whose newest event is past retention — another
 * writer's only once it must have rotated away from it (`rotateMs` plus the clock-skew
 * grace), this process's own once it has left it. Reads hide expired events before they
 * are deleted. Appends never wait on a sweep: they insert new rows, the sweep deletes old ones.
 */
export async function sweepDatabase(ctx: DatabaseContext, writer: DatabaseWriter): Promise<{ deleted: number }> {
  const { pool, now, retentionMs, rotateMs, counters, log } = ctx;
  const nowMs = now();
  const cutoff = nowMs - retentionMs;
  const sealedBefore = nowMs - rotateMs - SEAL_GRACE_MS;
  writer.retireIfIdle(cutoff);
  const own = writer.currentSegment ?? '';
  const drain = async (sql: string, params: unknown[]): Promise<number> => {
    let total = 0;
    for (let i = 0; i < MAX_BATCHES; i++) {
      const { rowCount } = await pool.query(sql, params);
      ctx.committed();
      total += rowCount ?? 0;
      if ((rowCount ?? 0) < DELETE_BATCH) break;
    }
    return total;
  };
  const events = await drain(
    `DELETE FROM cc_trace_events WHERE id IN (SELECT id FROM cc_trace_events WHERE at_ms < $1 ORDER BY at_ms LIMIT ${DELETE_BATCH})`,
    [cutoff],
  );
  await drain(`DELETE FROM cc_trace_runs WHERE run_id IN (SELECT run_id FROM cc_trace_runs WHERE at_ms < $1 LIMIT ${DELETE_BATCH})`, [cutoff]);
  // A day's records are used by that day's events only; the day holding the cutoff is kept whole.
  await drain(
    `DELETE FROM cc_trace_records WHERE (day, sha256) IN (SELECT day, sha256 FROM cc_trace_records WHERE day < $1 LIMIT ${DELETE_BATCH})`,
    [Math.floor(cutoff / DAY_MS)],
  );
  await drain(
    `DELETE FROM cc_trace_segments WHERE segment IN (
       SELECT segment FROM cc_trace_segments WHERE newest_ms < $1 AND segment <> $3 AND (created_ms < $2 OR writer = $4) LIMIT ${DELETE_BATCH})`,
    [cutoff, sealedBefore, own, ctx.writerId],
  );
  counters.eventsDeleted += events;
  if (events > 0) log.info({ deletedEvents: events }, 'trace retention sweep');
  return { deleted: events };
}
