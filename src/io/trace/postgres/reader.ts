import { isSafeId } from '../../../../schemas/ids.js';
import { sha256Hex } from '../../../core/digest.js';
import type { ChainStatus } from '../chain.js';
import { readerFor, RETENTION_GRACE_MS, summarizeRun, type ChainFinding } from '../chain-check.js';
import type { StoredEvent } from '../event-record.js';
import { isStoredEvent, parseRecordJson, rebuild } from '../event-rebuild.js';
import { type RunStanding } from '../admission.js';
import { decodeEventCursor, encodeEventCursor, eventPageLimit, pageLength, pageRequest, runPage, type RunPosition } from '../paging.js';
import { readFailure, type ListRunsQuery, type RunFilter, type RunPage, type RunReadQuery, type RunSummary, type RunTraceView, type TraceEventView } from '../store.js';
import { databaseErrorCode, safeDatabaseError } from './failure.js';
import { headBody, parseSegmentHeader, segmentId, type SegmentHeader } from './segment.js';
import { DAY_MS, recordKey, type DatabaseContext, type RecordKind } from './writer.js';

/** SQLSTATE of a query on a table that does not exist. */
const UNDEFINED_TABLE = '42P01';

/**
 * A page of a run's events within retention, in order, after a position (`at_ms`, `id`) and
 * of one caller when given (index `cc_trace_events_run`): `$5` rows, one more than the page.
 */
export const RUN_EVENTS_SQL = `SELECT id, segment, seq, at_ms, body, prev, link FROM cc_trace_events
  WHERE run_id = $1 AND at_ms >= $2 AND (at_ms, id) > ($3::bigint, $4::bigint) AND ($6::text IS NULL OR caller = $6::text)
  ORDER BY at_ms, id LIMIT $5`;

/**
 * How runs stand for an append: the caller of each run's first event within retention, and
 * its events counted up to the cap (so a run of any size costs at most that many index
 * entries). A run without events within retention has no row.
 */
export const RUN_STANDINGS_SQL = `SELECT w.run_id,
    (SELECT e.caller FROM cc_trace_events e WHERE e.run_id = w.run_id AND e.at_ms >= $2 ORDER BY e.at_ms, e.id LIMIT 1) AS owner,
    (SELECT count(*) FROM (SELECT 1 FROM cc_trace_events e WHERE e.run_id = w.run_id AND e.at_ms >= $2 LIMIT $3) AS capped)::integer AS events
  FROM unnest($1::text[]) AS w(run_id)`;

const EVENT_CURSOR = /^p1\.(-?\d{1,16})\.(\d{1,19})$/;

/** A page of runs, newest first, filtered on their latest event (indexes `cc_trace_runs_*`). */
export function listRunsSql(filter: RunFilter, after: RunPosition | null, limit: number): { sql: string; params: unknown[] } {
  const where = ['at_ms >= $1'];
  const params: unknown[] = [];
  const param = (value: unknown) => {
    params.push(value);
    return `$${params.length + 1}`;
  };
  if (filter.persona !== undefined) where.push(`subject_kind = 'persona' AND subject_id = ${param(filter.persona)}`);
  if (filter.worker !== undefined) where.push(`subject_kind = 'worker' AND subject_id = ${param(filter.worker)}`);
  if (filter.status !== undefined) where.push(`status = ${param(filter.status)}`);
  if (filter.outcome !== undefined) where.push(`outcome = ${param(filter.outcome)}`);
  const visibleTo = filter.visibleTo !== undefined && filter.visibleTo !== null ? filter.visibleTo : null;
  if (visibleTo !== null) where.push(`caller = ${param(visibleTo)}`);
  if (filter.fromMs !== undefined) where.push(`at_ms >= ${param(filter.fromMs)}::bigint`);
  if (filter.toMs !== undefined) where.push(`at_ms < ${param(filter.toMs)}::bigint`);
  if (filter.runId !== undefined) where.push(`run_id = ${param(filter.runId)}::text COLLATE "C"`);
  // A run holding an event of the request or trace (indexes cc_trace_events_request and _trace).
  for (const [column, value] of [
    ['request_id', filter.requestId],
    ['trace_id', filter.traceId],
  ] as const) {
    if (value === undefined) continue;
    const caller = visibleTo === null ? '' : ` AND e.caller = ${param(visibleTo)}`;
    where.push(`run_id IN (SELECT e.run_id FROM cc_trace_events e WHERE e.${column} = ${param(value)}::text COLLATE "C" AND e.at_ms >= $1${caller})`);
  }
  if (after) where.push(`(at_ms, run_id) < (${param(after.atMs)}::bigint, ${param(after.runId)}::text COLLATE "C")`);
  const sql =
    'SELECT run_id, at, route, subject_kind, subject_id, surface, status, outcome, chars, prompt_sha256, caller, compiled_for, topic_id, role, engine, warnings, request_id, traceparent ' +
    `FROM cc_trace_runs WHERE ${where.join(' AND ')} ORDER BY at_ms DESC, run_id DESC LIMIT ${param(limit + 1)}`;
  return { sql, params };
}

interface EventRow {
  id: string;
  segment: string;
  seq: string;
  at_ms: string;
  body: string;
  prev: string;
  link: string;
}

interface SegmentRow {
  segment: string;
  prev_segment: string | null;
  header: string;
  prev: string;
  link: string;
  last_seq: string;
  last_link: string;
  head: string;
}

interface NeighbourRow {
  segment: string;
  seq: string;
  at_ms: string;
  prev: string;
  link: string;
}

/** What the chain says about one segment, for the events of a run in it. */
interface SegmentReport {
  header: SegmentHeader | null;
  /** The status an intact link earns, and the signer to check it with. */
  reader: ReturnType<typeof readerFor>;
  findings: ChainFinding[];
  lastSeq: number;
  /** Events after this one were written after the end its writer vouched for. */
  vouchedUpTo: number | null;
}

/**
 * The reading half of the PostgreSQL backend: a run is four indexed queries, however many
 * events the database holds — its events (by `run_id`), the segments they are in with
 * their neighbours in the writer's chain (by primary key and `prev_segment`), the rows
 * before and after each event in its segment (by `segment, seq`), and the records its
 * events name (by day and sha256). `GET /runs` reads `cc_trace_runs` through its indexes.
 */
export class DatabaseReader {
  constructor(private readonly ctx: DatabaseContext) {}

  async readRun(runId: string, query: RunReadQuery = {}): Promise<RunTraceView | null> {
    if (!isSafeId(runId)) return null;
    const after = query.cursor === undefined ? null : decodeDatabaseCursor(query.cursor);
    try {
      return await this.read(runId, eventPageLimit(query), after, query.visibleTo ?? null);
    } catch (error) {
      // Nothing was ever written: the tables come with the first segment.
      if (databaseErrorCode(error) === UNDEFINED_TABLE) return null;
      throw readFailure(safeDatabaseError(error));
    }
  }

  async listRuns(query: ListRunsQuery = {}): Promise<RunPage> {
    const { limit, filter, after } = pageRequest(query);
    const minAtMs = this.ctx.now() - this.ctx.retentionMs;
    const { sql, params } = listRunsSql(filter, after, limit);
    try {
      const { rows } = await this.ctx.pool.query<{
        run_id: string;
        at: string;
        route: string;
        subject_kind: 'persona' | 'worker';
        subject_id: string;
        surface: string | null;
        status: number;
        outcome: RunSummary['outcome'];
        chars: number;
        prompt_sha256: string | null;
        caller: string | null;
        compiled_for: string | null;
        topic_id: string | null;
        role: string | null;
        engine: string | null;
        warnings: number;
        request_id: string | null;
        traceparent: string | null;
      }>(sql, [minAtMs, ...params]);
      const page = rows.slice(0, limit);
      const counts = new Map<string, number>();
      if (page.length > 0) {
        const counted = await this.ctx.pool.query<{ run_id: string; events: number }>(
          'SELECT run_id, count(*)::integer AS events FROM cc_trace_events WHERE run_id = ANY($1::text[]) AND at_ms >= $2 AND ($3::text IS NULL OR caller = $3::text) GROUP BY run_id',
          [page.map((row) => row.run_id), minAtMs, filter.visibleTo ?? null],
        );
        for (const row of counted.rows) counts.set(row.run_id, row.events);
      }
      const runs = page.map((row) => {
        const run: RunSummary = {
          runId: row.run_id,
          at: row.at,
          route: row.route,
          subject: { kind: row.subject_kind, id: row.subject_id },
          status: row.status,
          outcome: row.outcome,
          chars: row.chars,
          promptSha256: row.prompt_sha256,
          events: counts.get(row.run_id) ?? 0,
          compiledFor: row.compiled_for,
          topicId: row.topic_id,
          role: row.role,
          engine: row.engine,
          warnings: row.warnings,
        };
        if (row.surface !== null) run.surface = row.surface;
        if (row.caller !== null) run.caller = row.caller;
        if (row.request_id !== null) run.requestId = row.request_id;
        if (row.traceparent !== null) run.traceparent = row.traceparent;
        return run;
      });
      return runPage(runs, rows.length > limit);
    } catch (error) {
      if (databaseErrorCode(error) === UNDEFINED_TABLE) return runPage([], false);
      throw readFailure(safeDatabaseError(error));
    }
  }

  /** How each run stands for an append (`RUN_STANDINGS_SQL`); runs without events are left out. */
  async standings(runIds: string[], cap: number): Promise<Map<string, RunStanding>> {
    const minAtMs = this.ctx.now() - this.ctx.retentionMs;
    let rows: Array<{ run_id: string; owner: string | null; events: number }>;
    try {
      ({ rows } = await this.ctx.pool.query<{ run_id: string; owner: string | null; events: number }>(RUN_STANDINGS_SQL, [runIds, minAtMs, cap]));
    } catch (error) {
      // Nothing was ever written: the tables come with the first segment.
      if (databaseErrorCode(error) === UNDEFINED_TABLE) return new Map();
      throw safeDatabaseError(error);
    }
    const standing = new Map<string, RunStanding>();
    for (const row of rows) if (row.events > 0) standing.set(row.run_id, { owner: row.owner ?? undefined, events: row.events });
    return standing;
  }

  private async read(runId: string, limit: number, after: DatabaseCursor | null, visibleTo: string | null): Promise<RunTraceView | null> {
    const { pool, now, retentionMs, signer, counters } = this.ctx;
    const nowMs = now();
    const minAtMs = nowMs - retentionMs;
    const found = await pool.query<EventRow>(RUN_EVENTS_SQL, [runId, minAtMs, after?.atMs ?? Number.MIN_SAFE_INTEGER, after?.id ?? '0', limit + 1, visibleTo]);
    if (found.rows.length === 0) return after === null ? null : { runId, events: [], chain: summarizeRun([], [], signer), nextCursor: null };
    // The page: `limit` events, fewer once they delivered TRACE_PAGE_CHARS (the stored event says how many).
    const taken = pageLength(found.rows.slice(0, limit).map((row) => storedChars(row.body)), limit);
    const rows = found.rows.slice(0, taken);
    const more = found.rows.length > taken;
    const findings: ChainFinding[] = [];

    const reports = await this.segmentReports([...new Set(rows.map((row) => row.segment))], nowMs);
    for (const report of reports.values()) findings.push(...report.findings);

    // The rows before and after each event in its segment: is it still where its writer put it?
    const pairs = new Map<string, [string, number]>();
    for (const row of rows) {
      const seq = Number(row.seq);
      for (const near of [seq - 1, seq + 1]) if (near > 0) pairs.set(`${row.segment}:${near}`, [row.segment, near]);
    }
    const neighbours = new Map<string, NeighbourRow>();
    if (pairs.size > 0) {
      const list = [...pairs.values()];
      const result = await pool.query<NeighbourRow>(
        `SELECT segment, seq, at_ms, prev, link FROM cc_trace_events
         WHERE (segment, seq) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))`,
        [list.map(([segment]) => segment), list.map(([, seq]) => seq)],
      );
      for (const row of result.rows) neighbours.set(`${row.segment}:${row.seq}`, row);
    }

    const parsed = rows.map((row) => ({ row, body: parseBody(row) }));
    const keys = new Map<string, [number, string, RecordKind]>();
    for (const { body } of parsed) {
      if (!body) continue;
      const day = Math.floor(Date.parse(body.event.at) / DAY_MS);
      for (const [sha, kind] of referencedRecords(body.event)) keys.set(recordKey(day, sha, kind), [day, sha, kind]);
    }
    const records = new Map<string, string>();
    if (keys.size > 0) {
      const list = [...keys.values()];
      const result = await pool.query<{ day: number; sha256: string; kind: RecordKind; body: string }>(
        `SELECT day, sha256, kind, body FROM cc_trace_records WHERE (day, sha256, kind) IN (SELECT * FROM unnest($1::integer[], $2::text[], $3::text[]))`,
        [list.map(([day]) => day), list.map(([, sha]) => sha), list.map(([, , kind]) => kind)],
      );
      for (const row of result.rows) records.set(recordKey(row.day, row.sha256, row.kind), row.body);
    }

    const events: TraceEventView[] = [];
    const statuses: ChainStatus[] = [];
    for (const { row, body } of parsed) {
      const seq = Number(row.seq);
      const report = reports.get(row.segment)!;
      const at = body?.event.at ?? `row ${row.id}`;
      const where = `segment ${row.segment}`;
      let status: ChainStatus = report.reader.status;
      // As in a file: an event whose own link fails (or that comes after the end its writer
      // vouched for) is broken itself; a break in the chain around it breaks its run.
      const broken = (text: string, itself = false) => {
        if (itself) status = 'broken';
        findings.push({ broken: true, text: `${where}: ${text}` });
      };
      if (!body || body.event.runId !== runId) {
        broken(`the event at ${at} is not the event its row says it is (run, segment or place changed)`, true);
        continue;
      }
      // The row's caller column is what the query chose by; the chained body is what counts.
      if (visibleTo !== null && body.event.caller !== visibleTo) continue;
      if (!report.header) status = 'broken';
      else if (report.reader.check && report.reader.check.link(row.prev, Buffer.from(row.body)) !== row.link) {
        broken(`the event at ${at} was altered or forged: its link does not hold`, true);
      }
      // It continues from the row before it: the header for the first, else the previous event.
      const before = seq === 1 ? null : neighbours.get(`${row.segment}:${seq - 1}`);
      if (seq === 1) {
        if (report.header && row.prev !== report.headerLink) broken(`the chain breaks before the event at ${at}: it does not continue from its segment's header`);
      } else if (before) {
        if (before.link !== row.prev) broken(`the chain breaks before the event at ${at}: an event was removed, inserted or reordered there`);
      } else if (body.prevAt >= nowMs - retentionMs + RETENTION_GRACE_MS) {
        broken(`the event before the one at ${at} is missing, within retention: it was removed`);
      }
      // And the row after it continues from it; or, at the end, the head says it is the last.
      const after = neighbours.get(`${row.segment}:${seq + 1}`);
      if (after) {
        if (after.prev !== row.link) broken(`the chain breaks after the event at ${at}: an event was removed, inserted or reordered there`);
      } else if (report.lastSeq > seq && Number(row.at_ms) >= minAtMs + RETENTION_GRACE_MS) {
        broken(`the events after the one at ${at} are missing: its writer committed ${report.lastSeq - seq} more in this segment`);
      }
      if (report.header && seq > report.lastSeq) {
        broken(`the event at ${at} comes after the last event its writer committed to this segment: it was added later`, true);
      } else if (report.vouchedUpTo !== null && seq > report.vouchedUpTo) {
        broken(`the event at ${at} was written after the end its writer vouched for when it moved on: a batch answered 503 whose commit was in doubt, or a row added later`, true);
      }
      const day = Math.floor(Date.parse(body.event.at) / DAY_MS);
      const view = await rebuild<string>(
        body.event,
        {
          sha: (ref) => ref,
          async blob(ref) {
            const text = parseText(records.get(recordKey(day, ref, 'text')));
            return text !== null && sha256Hex(text) === ref ? text : null;
          },
          async data(ref) {
            const json = records.get(recordKey(day, ref, 'json'));
            return json === undefined ? undefined : parseRecordJson(json, ref);
          },
        },
        { status, holds: signer.keyId !== null ? status === 'signed' : status !== 'broken' },
      );
      counters.unreadableRecords += view.unreadable;
      events.push(view.event);
      statuses.push(status);
    }
    if (events.length === 0 && after === null && !more) return null;
    const last = rows[rows.length - 1]!;
    return { runId, events, chain: summarizeRun(statuses, findings, signer), nextCursor: more ? encodeEventCursor(`p1.${last.at_ms}.${last.id}`) : null };
  }

  /**
   * What the chain says about each segment holding an event of the run: its header (its own
   * link, its name), its head (the last event its writer committed), its hand-over from the
   * writer's previous segment, and where the writer's next segment says it ended.
   */
  private async segmentReports(ids: string[], nowMs: number): Promise<Map<string, SegmentReport & { headerLink: string }>> {
    const { pool, signer, retentionMs } = this.ctx;
    const { rows } = await pool.query<SegmentRow>(
      `SELECT segment, prev_segment, header, prev, link, last_seq, last_link, head FROM cc_trace_segments
       WHERE segment = ANY($1::text[]) OR prev_segment = ANY($1::text[])
          OR segment IN (SELECT prev_segment FROM cc_trace_segments WHERE segment = ANY($1::text[]))`,
      [ids],
    );
    const bySegment = new Map(rows.map((row) => [row.segment, row]));
    const successors = new Map<string, SegmentRow>();
    for (const row of rows) if (row.prev_segment !== null) successors.set(row.prev_segment, row);
    // The rows the headers of the run's segments and of their successors say their predecessors ended with.
    const claims: Array<[string, number]> = [];
    for (const row of rows) {
      const header = parseSegmentHeader(row.header);
      if (header?.prev && header.prev.seq > 0) claims.push([header.prev.segment, header.prev.seq]);
    }
    const ends = new Map<string, NeighbourRow>();
    if (claims.length > 0) {
      const result = await pool.query<NeighbourRow>(
        `SELECT segment, seq, at_ms, prev, link FROM cc_trace_events WHERE (segment, seq) IN (SELECT * FROM unnest($1::text[], $2::bigint[]))`,
        [claims.map(([segment]) => segment), claims.map(([, seq]) => seq)],
      );
      for (const row of result.rows) ends.set(`${row.segment}:${row.seq}`, row);
    }
    /** The link a segment's last acknowledged row carries now, as its successor's claim names it. */
    const endLink = (segment: string, seq: number): string | null => {
      if (seq === 0) return bySegment.get(segment)?.link ?? null;
      return ends.get(`${segment}:${seq}`)?.link ?? null;
    };

    const reports = new Map<string, SegmentReport & { headerLink: string }>();
    for (const id of ids) {
      const row = bySegment.get(id);
      const findings: ChainFinding[] = [];
      const broken = (text: string) => findings.push({ broken: true, text: `segment ${id}: ${text}` });
      if (!row) {
        broken('its segment record is missing: it was removed');
        reports.set(id, { header: null, headerLink: '', reader: { status: 'broken', check: null }, findings, lastSeq: 0, vouchedUpTo: null });
        continue;
      }
      const header = parseSegmentHeader(row.header);
      const reader = header ? readerFor(signer, header.mac, header.key) : ({ status: 'broken', check: null } as const);
      if (!header) broken('its header is unreadable');
      else {
        if (reader.status === 'unverifiable') {
          const why = signer.keyId === null ? 'no TRACE_SIGNING_KEY is configured here' : 'TRACE_SIGNING_KEY is another key';
          findings.push({ broken: false, text: `segment ${id} is signed with key ${header.key ?? '?'}, and ${why}: its links cannot be checked` });
        } else if (reader.status === 'linked' && signer.keyId !== null) {
          findings.push({ broken: false, text: `segment ${id} was written without a signing key: anyone who can write the trace tables could have written it` });
        }
        if (reader.check && reader.check.link(row.prev, Buffer.from(row.header)) !== row.link) broken('its header was altered');
        if (segmentId(header.writer, header.seq) !== id) broken('its header does not match its name: it was copied or renamed');
        if (reader.check && reader.check.link(row.last_link, headBody(id, Number(row.last_seq))) !== row.head) broken('its head (the last event committed) was altered');
        // The hand-over from the writer's previous segment.
        const claim = header.prev;
        if (claim) {
          const link = endLink(claim.segment, claim.seq);
          if (link === null) {
            if (Date.parse(claim.newest) >= nowMs - retentionMs + RETENTION_GRACE_MS) {
              broken(`the writer's previous segment ${claim.segment} ends before the ${claim.events} events it vouched for, up to ${claim.newest}, within retention: they were removed`);
            }
          } else if (link !== row.prev) {
            broken(`the writer's previous segment ${claim.segment} does not end with the event this segment continues from: it was altered or replaced`);
          }
        } else if (row.prev !== '0'.repeat(64)) {
          broken('its header continues from nothing its writer wrote');
        }
      }
      // Where the writer's next segment says this one ended.
      let vouchedUpTo: number | null = null;
      const next = successors.get(id);
      const nextHeader = next ? parseSegmentHeader(next.header) : null;
      if (next && nextHeader?.prev?.segment === id) {
        vouchedUpTo = nextHeader.prev.seq;
        const link = endLink(id, nextHeader.prev.seq);
        if (link !== null && link !== next.prev) broken('it does not end with the event its writer\'s next segment continues from: its last event was altered or replaced');
      }
      reports.set(id, { header, headerLink: row.link, reader, findings, lastSeq: Number(row.last_seq), vouchedUpTo });
    }
    return reports;
  }
}

/** Where a page of a run ended: its last row's time and id. */
interface DatabaseCursor {
  atMs: number;
  id: string;
}

function decodeDatabaseCursor(cursor: string): DatabaseCursor {
  let parsed: DatabaseCursor | null = null;
  decodeEventCursor(cursor, (text) => {
    const match = EVENT_CURSOR.exec(text);
    if (!match) return false;
    parsed = { atMs: Number(match[1]), id: match[2]! };
    return true;
  });
  return parsed!;
}

/** The characters a stored event says it delivered, from its row's body; 0 when it cannot be read. */
function storedChars(body: string): number {
  try {
    const chars = (JSON.parse(body) as { event?: { chars?: unknown } }).event?.chars;
    return typeof chars === 'number' && chars >= 0 ? chars : 0;
  } catch {
    return 0;
  }
}

interface EventBody {
  segment: string;
  seq: number;
  prevAt: number;
  event: StoredEvent<string>;
}

/** The row's body, when it is an event body for exactly this row. */
function parseBody(row: EventRow): EventBody | null {
  try {
    const body = JSON.parse(row.body) as Partial<EventBody> & { t?: unknown };
    if (body.t !== 'event' || body.segment !== row.segment || body.seq !== Number(row.seq) || typeof body.prevAt !== 'number') return null;
    return isStoredEvent<string>(body.event) ? (body as EventBody) : null;
  } catch {
    return null;
  }
}

/** The records an event names: its prompt texts, and its block summaries, sources, cache plan, tools and HUD. */
function referencedRecords(event: StoredEvent<string>): Array<[string, RecordKind]> {
  const json = [
    ...(event.blocks ?? []),
    ...(event.sources ?? []),
    ...(event.cache !== undefined ? [event.cache] : []),
    ...(event.realtime?.tools !== undefined ? [event.realtime.tools] : []),
    ...(event.hud !== undefined ? [event.hud] : []),
  ];
  const texts = [...(event.segments?.system ?? []), ...(event.segments?.input ?? [])];
  const valid = (sha: unknown): sha is string => typeof sha === 'string' && /^[0-9a-f]{64}$/.test(sha);
  return [...json.filter(valid).map((sha) => [sha, 'json'] as [string, RecordKind]), ...texts.filter(valid).map((sha) => [sha, 'text'] as [string, RecordKind])];
}

/** A stored prompt text (a JSON string); null when it is not one. */
function parseText(body: string | undefined): string | null {
  if (body === undefined) return null;
  try {
    const text = JSON.parse(body) as unknown;
    return typeof text === 'string' ? text : null;
  } catch {
    return null;
  }
}
