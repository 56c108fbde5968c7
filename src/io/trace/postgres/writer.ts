import type { Pool } from 'pg';
import { GENESIS_LINK, type ChainSigner } from '../chain.js';
import type { Memo } from '../../../core/memo.js';
import { eventRecord, TraceSplices, type RecordDigests, type Refs, type TraceSplice } from '../event-record.js';
import { type QueuedEvent } from '../admission.js';
import { listedFields, traceIdOfTraceparent } from '../event-record.js';
import type { TraceEventInput, TraceLog } from '../store.js';
import { databaseErrorCode, safeDatabaseError, TraceDatabaseError } from './failure.js';
import { withConnection } from './checkout.js';
import { migrate } from './schema.js';
import { eventRowBody, headBody, segmentHeaderBody, segmentId, type SegmentClaim } from './segment.js';

export const DAY_MS = 86_400_000;

/** A prompt text (stored as a JSON string) or a structure (stored as its JSON). */
export type RecordKind = 'text' | 'json';

export function recordKey(day: number, sha: string, kind: RecordKind): string {
  return `${day}:${kind}:${sha}`;
}

/** What the PostgreSQL backend counts besides group commit. */
export interface DatabaseCounters {
  /** Transactions committed: batches, new segments and readiness probes. */
  commits: number;
  segmentsCreated: number;
  /** Segment texts and structures sent to the database, and references to ones this process knows are there. */
  recordsWritten: number;
  recordsReused: number;
  /** Batches tried again after a deadlock or serialization failure. */
  retries: number;
  eventsDeleted: number;
  /** Records an event names that are missing or do not match their sha256 (read back without them). */
  unreadableRecords: number;
}

/** What the writer, the reader and retention share. */
export interface DatabaseContext {
  pool: Pool;
  now: () => number;
  log: TraceLog;
  signer: ChainSigner;
  writerId: string;
  retentionMs: number;
  rotateMs: number;
  counters: DatabaseCounters;
  /** A batch is being committed now (group commit is busy). */
  busy: () => boolean;
  /** Counts one committed transaction. */
  committed(): void;
}

interface Segment {
  id: string;
  seq: number;
  createdMs: number;
  /** The last event committed and acknowledged, and its link (the header's link while it holds none). */
  lastSeq: number;
  lastLink: string;
  lastAtMs: number;
  newestMs: number;
}

/** A batch that hit a deadlock or a serialization failure is tried again this many times. */
const RETRIES = 3;
/** How long `/readyz` mentions a segment that changed under the writer. */
const NOTICE_MS = 3_600_000;

/**
 * The writing half of the PostgreSQL backend: a batch is one statement, so one
 * transaction and one WAL flush (synchronous commit is set on every connection): the
 * records it needs (insert on conflict do nothing), its events, each run's latest event
 * (upsert), and the segment's head, which only moves when it is where this writer left it.
 * Nothing is acknowledged before the statement returns. After a failure the segment is
 * left, and the next one's header says where the acknowledged part ended, so a batch whose
 * commit was in doubt reads back unvouched.
 */
export class DatabaseWriter {
  private segment: Segment | null = null;
  private sequence = 0;
  private opening: Promise<Segment> | null = null;
  private previous: (SegmentClaim & { link: string }) | null = null;
  private migrated = false;
  /**
   * The scope a shared result's splice refers into (records are stored per day): valid while
   * every batch since it began committed, so replaced when one fails, and with it any
   * reference to a record that batch would have stored.
   */
  private scope: { day: number; splices: TraceSplices } | null = null;
  private notice: { atMs: number; text: string } | null = null;

  constructor(
    private readonly ctx: DatabaseContext,
    private readonly digests: RecordDigests,
    /** Record keys (`recordKey`) this process knows are stored: the cache set's `trace.stored` area. */
    private readonly known: Memo<string, true>,
  ) {}

  get currentSegment(): string | null {
    return this.segment?.id ?? null;
  }

  async write(batch: QueuedEvent[]): Promise<void> {
    const { now, rotateMs } = this.ctx;
    try {
      for (let attempt = 0; ; attempt++) {
        let target = this.segment;
        if (!target || now() - target.createdMs >= rotateMs) target = await this.rotate();
        if (await this.writeTo(target, batch)) return;
        // The segment row is gone or not as this writer left it: continue in a new segment.
        this.moveOn(target);
        if (attempt > 0) throw new TraceDatabaseError('ESEGMENT', 'trace segments keep changing under the writer');
      }
    } catch (error) {
      // Whether the records of this batch were stored is unknown: nothing may refer to them unseen.
      this.scope = null;
      throw error;
    }
  }

  async reopen(): Promise<void> {
    await this.rotate();
  }

  abandon(): void {
    if (this.segment) this.retire(this.segment);
  }

  /**
   * The readiness probe between batches, a write like an append: with no segment yet, open
   * one (schema checked, header committed); otherwise touch the segment row, which shows a
   * read-only or full database, and a segment removed under the writer.
   */
  async probe(): Promise<void> {
    const current = this.segment;
    if (!current) {
      await this.rotate();
      return;
    }
    const expected = current.lastSeq;
    const result = await this.ctx.pool.query('UPDATE cc_trace_segments SET probed_ms = $2 WHERE segment = $1 AND last_seq = $3', [current.id, this.ctx.now(), expected]);
    this.ctx.committed();
    // Not found as this writer left it — unless a batch committed since the probe began.
    if (result.rowCount !== 1 && this.segment === current && current.lastSeq === expected && !this.ctx.busy()) {
      this.moveOn(current);
      await this.rotate();
    }
  }

  note(): string | undefined {
    return this.notice && this.ctx.now() - this.notice.atMs < NOTICE_MS ? this.notice.text : undefined;
  }

  /** Retention: an idle segment past retention is left, so the next append opens a new one and the old can go. */
  retireIfIdle(cutoffMs: number): void {
    if (this.segment && !this.ctx.busy() && this.segment.newestMs < cutoffMs) this.retire(this.segment);
  }

  async close(): Promise<void> {
    await this.opening?.catch(() => undefined);
  }

  private retire(target: Segment): void {
    if (this.segment === target) this.segment = null;
    this.previous = {
      segment: target.id,
      seq: target.lastSeq,
      events: target.lastSeq,
      newest: new Date(target.newestMs).toISOString(),
      link: target.lastLink,
    };
  }

  private moveOn(target: Segment): void {
    const at = new Date(this.ctx.now()).toISOString();
    this.notice = { atMs: this.ctx.now(), text: `the current trace segment was removed or changed in the database at ${at}; appends continue in a new segment` };
    this.ctx.log.warn({ segment: target.id }, 'trace segment changed under the writer; continuing in a new segment');
    this.retire(target);
  }

  private rotate(): Promise<Segment> {
    this.opening ??= this.openNext().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  /** Commits a new segment's header row (and the schema first, once per process). */
  private async openNext(): Promise<Segment> {
    const { pool, now, signer, writerId, counters } = this.ctx;
    if (this.segment) this.retire(this.segment);
    try {
      if (!this.migrated) {
        const { applied } = await migrate(pool);
        this.migrated = true;
        if (applied.length > 0) this.ctx.log.info({ applied }, 'trace schema migrated');
      }
      const createdMs = now();
      const seq = ++this.sequence;
      const id = segmentId(writerId, seq);
      const from = this.previous?.link ?? GENESIS_LINK;
      let prev: SegmentClaim | null = null;
      if (this.previous) {
        const { link: _link, ...claim } = this.previous;
        prev = claim;
      }
      const header = segmentHeaderBody({ writer: writerId, seq, createdMs, mac: signer.mac, key: signer.keyId, prev });
      const link = signer.link(from, header);
      const head = signer.link(link, headBody(id, 0));
      await pool.query(
        `INSERT INTO cc_trace_segments (segment, writer, seq, created_ms, prev_segment, header, prev, link, last_seq, last_link, head, newest_ms)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0, $8, $9, $4)`,
        [id, writerId, seq, createdMs, prev?.segment ?? null, header, from, link, head],
      );
      this.ctx.committed();
      counters.segmentsCreated++;
      this.segment = { id, seq, createdMs, lastSeq: 0, lastLink: link, lastAtMs: createdMs, newestMs: createdMs };
      return this.segment;
    } catch (error) {
      throw safeDatabaseError(error);
    }
  }

  /** One statement for the whole batch; false when the segment was not where this writer left it (nothing was written). */
  private async writeTo(target: Segment, batch: QueuedEvent[]): Promise<boolean> {
    const { rows, fresh, toKeep, seq, link, prevAtMs, newestMs } = this.rowsFor(target, batch);
    const head = this.ctx.signer.link(link, headBody(target.id, seq));
    // Typed arrays (unnest). Tried as one JSON parameter per table instead: this process spent
    // 5–10 % less CPU per append, but the server parsing it made 15–25 % fewer appends/s on the
    // same 2 vCPUs (bench/trace-bench.ts --postgres, three rounds each, interleaved).
    const params = [
      target.id,
      target.lastSeq,
      seq,
      link,
      head,
      newestMs,
      fresh.map((record) => record.day),
      fresh.map((record) => record.sha),
      fresh.map((record) => record.kind),
      fresh.map((record) => record.body),
      ...columnParams(rows),
    ];
    const written = await this.commitRetrying(params);
    if (written !== batch.length) {
      // Nothing was written, the records this batch referred to included.
      this.scope = null;
      return false;
    }
    this.ctx.committed();
    this.ctx.counters.recordsWritten += fresh.length;
    for (const record of fresh) this.known.set(recordKey(record.day, record.sha, record.kind), true, 96);
    // Only now do the references a splice holds point at stored records.
    for (const { splices, result, splice } of toKeep) splices.keep(result, splice);
    target.lastSeq = seq;
    target.lastLink = link;
    target.lastAtMs = prevAtMs;
    target.newestMs = newestMs;
    return true;
  }

  /** The batch's event rows (in `BATCH_SQL`'s parameter order, from $11), the records they need that are not known stored, and the chain after them. */
  private rowsFor(target: Segment, batch: QueuedEvent[]) {
    const { signer, counters } = this.ctx;
    const digests = this.digests;
    const records = new Map<string, { day: number; sha: string; kind: RecordKind; body: string }>();
    let day = 0;
    const refer = (kind: RecordKind, sha: string, body: () => string): string => {
      const key = recordKey(day, sha, kind);
      if (this.known.get(key)) counters.recordsReused++;
      else if (!records.has(key)) records.set(key, { day, sha, kind, body: body() });
      return `"${sha}"`;
    };
    const refs: Refs = {
      // As a JSON string: PostgreSQL text cannot hold a NUL, and a lone surrogate would not survive UTF-8.
      blob: (text) => refer('text', digests.text(text), () => JSON.stringify(text)),
      data: ({ json, sha }) => refer('json', sha, () => json),
      block: (block) => refs.data(digests.block(block)),
      source: (source) => refs.data(digests.source(source)),
      json: (value) => refs.data(digests.object(value)),
    };
    const rows = eventColumns();
    const toKeep: Array<{ splices: TraceSplices; result: object; splice: TraceSplice | undefined }> = [];
    let link = target.lastLink;
    let seq = target.lastSeq;
    let prevAtMs = target.lastAtMs;
    let newestMs = target.newestMs;
    for (const { event, result } of batch) {
      const atMs = Date.parse(event.at);
      day = Math.floor(atMs / DAY_MS);
      if (this.scope?.day !== day) this.scope = { day, splices: new TraceSplices() };
      const { json, chars, splice } = eventRecord(event, refs, this.scope.splices, result);
      if (result !== undefined) toKeep.push({ splices: this.scope.splices, result, splice });
      seq++;
      const body = eventRowBody(target.id, seq, prevAtMs, json);
      const next = signer.link(link, body);
      pushEvent(rows, event, { seq, atMs, body, prev: link, link: next, chars });
      link = next;
      prevAtMs = atMs;
      newestMs = Math.max(newestMs, atMs);
    }
    // A fixed order, so two replicas storing the same new records never wait on each other in a cycle.
    const fresh = [...records.values()].sort((a, b) => a.day - b.day || (a.sha < b.sha ? -1 : a.sha > b.sha ? 1 : 0) || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0));
    return { rows, fresh, toKeep, seq, link, prevAtMs, newestMs };
  }

  /** `commit`, again after a deadlock or a serialization failure (at most RETRIES times); any other failure as a safe error. */
  private async commitRetrying(params: unknown[]): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.commit(params);
      } catch (error) {
        const code = databaseErrorCode(error);
        if ((code === '40P01' || code === '40001') && attempt < RETRIES) {
          this.ctx.counters.retries++;
          continue;
        }
        throw safeDatabaseError(error);
      }
    }
  }

  /** The batch as one statement (one transaction); the number of events it inserted. */
  private async commit(params: unknown[]): Promise<number> {
    return withConnection(this.ctx.pool, async (client) => {
      const { rows } = await client.query<{ events: number }>(BATCH_SQL, params);
      return rows[0]?.events ?? 0;
    });
  }
}

/**
 * One batch, one statement: the segment's head moves only from where this writer left it
 * (`$2`); the events are inserted only through that update, so if the segment row is gone
 * or was changed, nothing is written and the count says so. Runs are upserted in run-id
 * order, each to its latest event.
 */
const BATCH_SQL = `
WITH head AS (
  UPDATE cc_trace_segments SET last_seq = $3, last_link = $4, head = $5, newest_ms = GREATEST(newest_ms, $6)
  WHERE segment = $1 AND last_seq = $2
  RETURNING segment
), records AS (
  INSERT INTO cc_trace_records (day, sha256, kind, body)
  SELECT r.day, r.sha, r.kind, r.body FROM unnest($7::integer[], $8::text[], $9::text[], $10::text[]) AS r(day, sha, kind, body)
  WHERE EXISTS (SELECT 1 FROM head)
  ON CONFLICT DO NOTHING
), events AS (
  INSERT INTO cc_trace_events (segment, seq, run_id, at_ms, body, prev, link, caller, request_id, trace_id)
  SELECT head.segment, e.seq, e.run_id, e.at_ms, e.body, e.prev, e.link, e.caller, e.request_id, e.trace_id
  FROM head, unnest($11::bigint[], $12::text[], $13::bigint[], $14::text[], $15::text[], $16::text[], $26::text[], $27::text[], $28::text[])
    AS e(seq, run_id, at_ms, body, prev, link, caller, request_id, trace_id)
  RETURNING id, seq, run_id, at_ms, caller, request_id
), latest AS (
  SELECT DISTINCT ON (events.run_id) events.id, events.run_id, events.at_ms, events.caller, events.request_id, s.at, s.route, s.kind, s.subject, s.surface,
    s.status, s.outcome, s.chars, s.prompt, l.compiled_for, l.topic_id, l.role, l.engine, l.warnings, l.traceparent
  FROM events
  JOIN unnest($11::bigint[], $17::text[], $18::text[], $19::text[], $20::text[], $21::text[], $22::integer[], $23::text[], $24::integer[], $25::text[])
    AS s(seq, at, route, kind, subject, surface, status, outcome, chars, prompt) ON s.seq = events.seq
  JOIN unnest($11::bigint[], $29::text[], $30::text[], $31::text[], $32::text[], $33::integer[], $34::text[])
    AS l(seq, compiled_for, topic_id, role, engine, warnings, traceparent) ON l.seq = events.seq
  ORDER BY events.run_id, events.at_ms DESC, events.id DESC
), runs AS (
  INSERT INTO cc_trace_runs (run_id, at_ms, event_id, at, route, subject_kind, subject_id, surface, status, outcome, chars, prompt_sha256, caller,
    compiled_for, topic_id, role, engine, warnings, request_id, traceparent)
  SELECT run_id, at_ms, id, at, route, kind, subject, surface, status, outcome, chars, prompt, caller,
    compiled_for, topic_id, role, engine, warnings, request_id, traceparent FROM latest ORDER BY run_id
  ON CONFLICT (run_id) DO UPDATE SET
    at_ms = EXCLUDED.at_ms, event_id = EXCLUDED.event_id, at = EXCLUDED.at, route = EXCLUDED.route,
    subject_kind = EXCLUDED.subject_kind, subject_id = EXCLUDED.subject_id, surface = EXCLUDED.surface,
    status = EXCLUDED.status, outcome = EXCLUDED.outcome, chars = EXCLUDED.chars, prompt_sha256 = EXCLUDED.prompt_sha256,
    caller = EXCLUDED.caller, compiled_for = EXCLUDED.compiled_for, topic_id = EXCLUDED.topic_id, role = EXCLUDED.role,
    engine = EXCLUDED.engine, warnings = EXCLUDED.warnings, request_id = EXCLUDED.request_id, traceparent = EXCLUDED.traceparent
  WHERE (EXCLUDED.at_ms, EXCLUDED.event_id) > (cc_trace_runs.at_ms, cc_trace_runs.event_id)
)
SELECT count(*)::integer AS events FROM events`;

/** A batch's events as columns: one array per parameter of the statement's `unnest`s. */
function eventColumns() {
  return {
    seq: [] as number[],
    runId: [] as string[],
    atMs: [] as number[],
    body: [] as string[],
    prev: [] as string[],
    link: [] as string[],
    at: [] as string[],
    route: [] as string[],
    kind: [] as string[],
    subject: [] as string[],
    surface: [] as Array<string | null>,
    status: [] as number[],
    outcome: [] as string[],
    chars: [] as number[],
    prompt: [] as Array<string | null>,
    caller: [] as Array<string | null>,
    requestId: [] as Array<string | null>,
    traceId: [] as Array<string | null>,
    compiledFor: [] as Array<string | null>,
    topicId: [] as Array<string | null>,
    role: [] as Array<string | null>,
    engine: [] as Array<string | null>,
    warnings: [] as number[],
    traceparent: [] as Array<string | null>,
  };
}

type EventColumns = ReturnType<typeof eventColumns>;

/** One event's row: its place in the chain, what the runs table lists, and what `GET /runs` finds it by. */
function pushEvent(rows: EventColumns, event: TraceEventInput, row: { seq: number; atMs: number; body: string; prev: string; link: string; chars: number }): void {
  rows.seq.push(row.seq);
  rows.runId.push(event.runId);
  rows.atMs.push(row.atMs);
  rows.body.push(row.body);
  rows.prev.push(row.prev);
  rows.link.push(row.link);
  rows.at.push(event.at);
  rows.route.push(event.route);
  rows.kind.push(event.subject.kind);
  rows.subject.push(event.subject.id);
  rows.surface.push(event.surface ?? null);
  rows.status.push(event.status);
  rows.outcome.push(event.outcome);
  rows.chars.push(row.chars);
  rows.prompt.push(event.promptSha256 ?? null);
  rows.caller.push(event.caller ?? null);
  const listed = listedFields(event);
  rows.requestId.push(listed.requestId ?? null);
  rows.traceId.push(traceIdOfTraceparent(listed.traceparent) ?? null);
  rows.compiledFor.push(listed.compiledFor);
  rows.topicId.push(listed.topicId);
  rows.role.push(listed.role);
  rows.engine.push(listed.engine);
  rows.warnings.push(listed.warnings);
  rows.traceparent.push(listed.traceparent ?? null);
}

/** The columns as the statement's parameters $11 to $34, in their order. */
function columnParams(rows: EventColumns): unknown[] {
  return [
    rows.seq,
    rows.runId,
    rows.atMs,
    rows.body,
    rows.prev,
    rows.link,
    rows.at,
    rows.route,
    rows.kind,
    rows.subject,
    rows.surface,
    rows.status,
    rows.outcome,
    rows.chars,
    rows.prompt,
    rows.caller,
    rows.requestId,
    rows.traceId,
    rows.compiledFor,
    rows.topicId,
    rows.role,
    rows.engine,
    rows.warnings,
    rows.traceparent,
  ];
}
