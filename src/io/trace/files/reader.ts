import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { isSafeId } from '../../../../schemas/ids.js';
import type { Memo } from '../../../core/memo.js';
import type { ChainStatus, Predecessor } from '../chain.js';
import { checkSuccession, summarizeRun, type ChainFinding, type PredecessorState } from '../chain-check.js';
import type { StoredEvent } from '../event-record.js';
import { isStoredEvent, rebuild } from '../event-rebuild.js';
import { decodeEventCursor, encodeEventCursor, eventPageLimit, pageLength } from '../paging.js';
import { readFailure, type ListRunsQuery, type RunPage, type RunReadQuery, type RunTraceView, type TraceEventView } from '../store.js';
import { SEAL_GRACE_MS } from '../store.js';
import { BLOB_PREFIX, DATA_PREFIX, EVENT_PREFIX, FILE_PREFIX, type RecordRef } from './format.js';
import { chainHeader, parseBlobLine, parseDataLine, parseFileHeader, parseTraceFileName, startsWith } from './parse.js';
import { FileChainScan, type FileChain } from './chain-scan.js';
import { readHead } from './event-head.js';
import { summarize, type EventLocation, type IndexedFile } from './run-index.js';
import { eventOrder, evictedParts, visible, type EvictedPart } from './run-lookup.js';
import { holdingBytes, listRunsFromIndex, MAX_LISTING_SCAN_BYTES, type EvictedEvents, type LineFilter } from './run-listing.js';
import { EvictedLinesBuilder, type EvictedLines } from './evicted-lines.js';
import { locate, type FileWriter } from './writer.js';
import type { FilesContext } from './context.js';

const SCAN_CHUNK = 1 << 20;
/** Where an event line starts after another line. */
const EVENT_LINE = Buffer.concat([Buffer.from('\n'), EVENT_PREFIX]);
/** A header line is a few hundred bytes: names, times, counts. */
const HEADER_READ_BYTES = 4096;
/**
 * At most this much of one evicted part's lines is remembered for listings: about 4,000 event
 * lines of distinct run and request ids (≈ 250 bytes each, measured 280), under the
 * `trace.evictedLines` area of the default cache set (≈ 1.1 MB), so a part kept fits in it.
 * A larger part is read each time, and its fill gives up there (its refused lines are then
 * skipped unparsed again).
 */
export const MAX_EVICTED_LINES_BYTES = 1024 * 1024;

/** A file's chain as checked, with the stat it was checked at: it holds while the file is unchanged (same inode, size, mtime and ctime). */
export interface CheckedChain {
  readonly stamp: string;
  readonly chain: FileChain;
}

/** About what a checked chain holds: each event's status by offset, and the texts of what was found. */
function chainBytes(name: string, { stamp, chain }: CheckedChain): number {
  let bytes = 2 * (name.length + stamp.length) + 256 + 48 * chain.events.size;
  for (const text of chain.altered.values()) bytes += 2 * text.length + 48;
  for (const finding of chain.findings) bytes += 2 * finding.text.length + 64;
  return bytes;
}

interface OpenFiles {
  /** The file opened for reading, or null when it is gone. */
  open(name: string): Promise<FileHandle | null>;
  close(): Promise<void>;
}

/** What the chain says about one file, for the runs it holds events of. */
interface FileReport {
  chain: FileChain;
  findings: ChainFinding[];
  /** Events at or after `from` come after the end the writer's next file vouches for. */
  unvouched: { from: number; text: string } | null;
}

const noop = () => {};

/**
 * The reading half of the files backend: an index of every file in the directory (own
 * events as written, other writers' files scanned incrementally, the oldest evicted to
 * a Bloom filter per file past a budget), runs read back by positional reads, and the
 * chain of every file that holds one checked. See docs/traces.md, "Reading".
 */
export class FileReader {
  private refreshing: Promise<void> | null = null;
  private readonly chainScans = new Map<string, Promise<FileChain>>();

  constructor(
    private readonly ctx: FilesContext,
    private readonly writer: FileWriter,
    /** Checked file chains, by file name: an area of the app's cache set (`TraceStoreMemo.chains`). */
    private readonly chains: Memo<string, CheckedChain>,
    /** What evicted parts' lines hold for listings, by file name: an area of the app's cache set (`TraceStoreMemo.evictedLines`). */
    private readonly lines: Memo<string, EvictedLines>,
    /** Bytes of evicted files one listing may read (`run-listing.ts`). */
    private readonly listingScanBytes = MAX_LISTING_SCAN_BYTES,
  ) {}

  /** Brings the index up to date with the directory: new files and lines of other writers, files gone. */
  refresh(): Promise<void> {
    this.refreshing ??= this.doRefresh().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  /**
   * A page of the run: the `limit` events after the cursor (fewer once they delivered
   * `TRACE_PAGE_CHARS`), found by a bounded selection over the index and a scan of the
   * evicted files that may hold the run — never every event of it — then read back by
   * positional reads and checked against the chains of their files.
   */
  async readRun(runId: string, query: RunReadQuery = {}): Promise<RunTraceView | null> {
    if (!isSafeId(runId)) return null;
    const limit = eventPageLimit(query);
    const after = query.cursor === undefined ? null : decodeFileCursor(query.cursor);
    const visibleTo = query.visibleTo ?? null;
    const { signer, counters } = this.ctx;
    let page: { locations: EventLocation[]; more: boolean };
    const reports = new Map<string, FileReport | null>();
    let files = this.openFiles();
    try {
      await this.refresh();
      page = await this.locatePage(runId, after, limit, visibleTo);
      for (let attempt = 0; ; attempt++) {
        for (const location of page.locations) if (!reports.has(location.file)) reports.set(location.file, await this.fileReport(location.file, files));
        const stale = [...new Set(page.locations.filter((location) => reports.get(location.file)?.chain.events.has(location.offset) === false).map((location) => location.file))];
        if (stale.length === 0 || attempt > 0) break;
        await files.close();
        files = this.openFiles();
        await this.reindex(stale);
        reports.clear();
        page = await this.locatePage(runId, after, limit, visibleTo);
      }
    } catch (error) {
      await files.close();
      throw readFailure(error);
    }
    if (page.locations.length === 0 && after === null) {
      await files.close();
      return null;
    }
    try {
      const events: TraceEventView[] = [];
      const statuses: ChainStatus[] = [];
      const findings = [...new Set(page.locations.map((location) => location.file))].flatMap((file) => reports.get(file)?.findings ?? []);
      // Records repeat from event to event of a run; each is read and checked once per page.
      const known = new Map<string, unknown>();
      for (const location of page.locations) {
        const report = reports.get(location.file);
        const status = report?.chain.events.get(location.offset);
        const handle = report && status ? await files.open(location.file) : null;
        if (!report || !status || !handle) continue;
        const stored = parseEventLine(await readRange(handle, location.offset, location.length));
        if (!stored || stored.runId !== runId || (visibleTo !== null && stored.caller !== visibleTo)) continue;
        const unvouched = report.unvouched !== null && location.offset >= report.unvouched.from;
        const link = unvouched ? 'broken' : status;
        const altered = unvouched ? report.unvouched!.text : report.chain.altered.get(location.offset);
        if (altered) findings.push({ broken: true, text: altered });
        const record = async ([sha, offset, length]: RecordRef, parse: (line: string, sha: string) => unknown) => {
          const key = `${location.file}:${offset}`;
          if (!known.has(key)) known.set(key, parse((await readRange(handle, offset, length)).toString('utf8'), sha));
          return known.get(key);
        };
        const view = await rebuild<RecordRef>(
          stored,
          {
            sha: (ref) => ref[0],
            blob: async (ref) => (await record(ref, parseBlobLine)) as string | null,
            data: (ref) => record(ref, parseDataLine),
          },
          { status: link, holds: signer.keyId !== null ? link === 'signed' : link !== 'broken' },
        );
        counters.unreadableLines += view.unreadable;
        events.push(view.event);
        statuses.push(link);
      }
      if (events.length === 0 && after === null && !page.more) return null;
      const last = page.locations[page.locations.length - 1];
      return { runId, events, chain: summarizeRun(statuses, findings, signer), nextCursor: page.more && last ? encodeFileCursor(last) : null };
    } catch (error) {
      throw readFailure(error);
    } finally {
      await files.close();
    }
  }

  /** Runs newest first from the index and the evicted files that may answer (`run-listing.ts`); each file opened once for the listing. */
  async listRuns(query: ListRunsQuery = {}): Promise<RunPage> {
    const files = this.openFiles();
    try {
      query.signal?.throwIfAborted();
      await this.refresh();
      return await listRunsFromIndex(this.ctx.index, this.listingReads(files), query, this.ctx.now() - this.ctx.retentionMs, this.listingScanBytes, query.signal);
    } catch (error) {
      throw readFailure(error);
    } finally {
      await files.close();
    }
  }

  /**
   * Evicted parts as a listing reads them: each event line as its head, parsed whole only
   * when it does not start as the writer writes one; the whole summary read again, one line,
   * for the few runs a page shows. A part read to its end is remembered (`EvictedLines`, in
   * the `trace.evictedLines` area), so the next listing that needs it reads no file; a part
   * whose lines would take more than `MAX_EVICTED_LINES_BYTES` is read every time.
   */
  private listingReads(files: OpenFiles): EvictedEvents {
    return {
      read: async ({ entry, bytes }, visit, keep, signal) => {
        const known = this.lines.get(entry.name);
        if (known && known.bytes === bytes && known.createdMs === entry.createdMs) return known.visit(visit, keep?.head, signal);
        const handle = await files.open(entry.name);
        if (!handle) return;
        // Every line's head is kept for the next listing, whichever this one keeps.
        const fill = new EvictedLinesBuilder(entry, bytes, MAX_EVICTED_LINES_BYTES);
        await this.scanLines(
          entry.name,
          0,
          bytes,
          (line, offset, length) => {
            const kept = !keep || keep.line(line);
            // A line refused is parsed only to be remembered.
            if (!kept && !fill.open) return;
            const head = readHead(line);
            const event = head ? { file: entry.name, fileCreatedMs: entry.createdMs, offset, length, ...head } : this.lineEvent(entry, line, offset, length, false);
            if (!event) return;
            fill.add(event);
            if (kept) visit(event);
          },
          handle,
          signal,
          true,
        );
        const filled = fill.finish();
        if (filled) this.lines.set(entry.name, filled, filled.bytesHeld);
      },
      summary: async (event) => {
        const known = this.lines.get(event.file);
        const kept = known?.createdMs === event.fileCreatedMs ? known.wholeSummary(event.offset) : undefined;
        if (kept && kept.runId === event.summary.runId && Date.parse(kept.at) === event.atMs) return kept;
        const handle = await files.open(event.file);
        const stored = handle ? parseEventLine(await readRange(handle, event.offset, event.length)) : null;
        if (!stored || stored.runId !== event.summary.runId || Date.parse(stored.at) !== event.atMs) return null;
        const summary = summarize(stored, stored.chars ?? 0);
        // Remembered with the part's lines: the same page asked again reads no file.
        if (known?.createdMs === event.fileCreatedMs && known.keepWhole(event.offset, summary) > 0) this.lines.set(event.file, known, known.bytesHeld);
        return summary;
      },
    };
  }

  /** An evicted part's events, read whole; with `keep`, lines it refuses are skipped unparsed. */
  private async readEvicted({ entry, bytes }: EvictedPart, visit: (location: EventLocation) => void, keep: LineFilter): Promise<void> {
    try {
      await this.scanLines(entry.name, 0, bytes, (line, offset, length) => {
        const location = this.lineEvent(entry, line, offset, length, false, keep);
        if (location) visit(location);
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }

  /**
   * The event a line holds, or null (counted as unreadable unless it is a blob, data or
   * header line). With `keep`, an event line it refuses is skipped unparsed.
   */
  private lineEvent(entry: IndexedFile, line: Buffer, offset: number, length: number, count: boolean, keep?: LineFilter): EventLocation | null {
    const { counters } = this.ctx;
    if (!startsWith(line, EVENT_PREFIX)) {
      if (count && !startsWith(line, BLOB_PREFIX) && !startsWith(line, DATA_PREFIX) && !startsWith(line, FILE_PREFIX)) {
        counters.unreadableLines++;
      }
      return null;
    }
    if (keep && !keep(line)) return null;
    const stored = parseEventLine(line);
    if (stored) return locate(entry, offset, length, stored, stored.chars ?? 0);
    if (count) counters.unreadableLines++;
    return null;
  }

  /**
   * Calls `visit` for each complete line from `from` up to `size` — with `eventsOnly`, each
   * event line, the others skipped by a search for the next (most lines are blob and data
   * records) — and returns where the last complete line ends. Stops with the signal, a read
   * at a time.
   */
  private async scanLines(
    name: string,
    from: number,
    size: number,
    visit: (line: Buffer, offset: number, length: number) => void,
    opened?: FileHandle,
    signal?: AbortSignal,
    eventsOnly = false,
  ): Promise<number> {
    const handle = opened ?? (await this.ctx.fs.open(join(this.ctx.dir, name), 'r'));
    try {
      // One buffer: the incomplete line a read ends with moves to its start, and the next read fills the rest (grown for a longer line).
      let buffer = Buffer.allocUnsafe(SCAN_CHUNK);
      let position = from;
      let carried = 0;
      while (position + carried < size) {
        signal?.throwIfAborted();
        if (carried === buffer.length) {
          const bigger = Buffer.allocUnsafe(2 * buffer.length);
          buffer.copy(bigger, 0, 0, carried);
          buffer = bigger;
        }
        const want = Math.min(buffer.length - carried, size - position - carried);
        const { bytesRead } = await handle.read(buffer, carried, want, position + carried);
        if (bytesRead === 0) break;
        const data = buffer.subarray(0, carried + bytesRead);
        let start = 0;
        if (eventsOnly) {
          // `start` is where a line starts: an event line is visited; otherwise the search jumps to the next one, or past the last newline.
          for (;;) {
            if (start + EVENT_PREFIX.length > data.length || data.compare(EVENT_PREFIX, 0, EVENT_PREFIX.length, start, start + EVENT_PREFIX.length) !== 0) {
              const next = data.indexOf(EVENT_LINE, start);
              if (next === -1) {
                const last = data.lastIndexOf(0x0a);
                if (last >= start) start = last + 1;
                break;
              }
              start = next + 1;
            }
            const newline = data.indexOf(0x0a, start);
            if (newline === -1) break;
            visit(data.subarray(start, newline), position + start, newline - start + 1);
            start = newline + 1;
          }
        } else {
          for (let newline = data.indexOf(0x0a, start); newline !== -1; newline = data.indexOf(0x0a, start)) {
            visit(data.subarray(start, newline), position + start, newline - start + 1);
            start = newline + 1;
          }
        }
        position += start;
        carried = data.length - start;
        buffer.copy(buffer, 0, start, data.length);
      }
      return position;
    } finally {
      if (!opened) await handle.close();
    }
  }

  /** Reads another writer's file from where the last scan stopped; an incomplete last line waits for next time. */
  private async scanFile(entry: IndexedFile, size: number): Promise<void> {
    const { index } = this.ctx;
    entry.scannedBytes = await this.scanLines(entry.name, entry.scannedBytes, size, (line, offset, length) => {
      const location = this.lineEvent(entry, line, offset, length, true);
      if (!location) return;
      index.add(entry, location);
      // Within its budget while it scans, too: a restart on a full directory, another worker's growing file.
      index.evictOverBudget();
    });
  }

  /**
   * The run's events in evicted parts (no longer held in memory), read from disk: of the
   * parts whose run filter may hold it — by `visibleTo`, when given, so another caller's run
   * reads nothing, as an unknown one. A vanished file holds nothing.
   */
  private async scanEvicted(minAtMs: number, visit: (location: EventLocation) => void, runId: string, visibleTo?: string | null): Promise<void> {
    // Event lines without the run id are skipped unparsed.
    const keep = holdingBytes(Buffer.from(`"runId":${JSON.stringify(runId)}`));
    for (const part of evictedParts(this.ctx.index, minAtMs, runId, visibleTo)) await this.readEvicted(part, visit, keep);
  }

  private async listTraceFiles(): Promise<string[]> {
    try {
      return (await this.ctx.fs.readdir(this.ctx.dir)).filter((name) => parseTraceFileName(name) !== null);
    } catch (error) {
      if (isGone(error)) return [];
      throw error;
    }
  }

  private async doRefresh(): Promise<void> {
    const { index, fs, dir, now, rotateMs } = this.ctx;
    const names = await this.listTraceFiles();
    const present = new Set(names);
    const sealedBefore = now() - rotateMs - SEAL_GRACE_MS;
    for (const name of names) {
      const known = index.files.get(name);
      if (known && (known.own || known.complete)) continue;
      const info = await fs.stat(join(dir, name)).catch(() => null);
      if (!info) continue;
      const entry = known ?? index.file(name, parseTraceFileName(name)!.createdMs, false);
      if (info.size > entry.scannedBytes) await this.scanFile(entry, info.size);
      // Writers rotate before a file is rotateMs old, so an older file never grows again.
      if (entry.createdMs < sealedBefore) entry.complete = true;
    }
    index.evictOverBudget();
    for (const name of [...index.files.keys()]) {
      if (!present.has(name) && name !== this.writer.currentName && name !== this.writer.openingName) index.dropFile(name);
    }
  }

  /** Files opened at most once for one read, whatever it needs of them; closed together. */
  private openFiles(): OpenFiles {
    const { fs, dir } = this.ctx;
    const handles = new Map<string, Promise<FileHandle | null>>();
    return {
      open(name) {
        let handle = handles.get(name);
        if (!handle) {
          handle = fs.open(join(dir, name), 'r').catch((error: unknown) => {
            if (isGone(error)) return null;
            throw error;
          });
          handles.set(name, handle);
        }
        return handle;
      },
      async close() {
        for (const handle of handles.values()) await (await handle.catch(() => null))?.close().catch(noop);
        handles.clear();
      },
    };
  }

  /** The file's chain, checked in full, or as checked before while the file is unchanged; null when it is gone. */
  private async fileChain(name: string, files: OpenFiles): Promise<FileChain | null> {
    const handle = await files.open(name);
    if (!handle) return null;
    const info = await handle.stat();
    // ctime moves on every write and truncate, and cannot be set back without the clock.
    const stamp = `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
    const known = this.chains.get(name);
    if (known?.stamp === stamp) return known.chain;
    // Concurrent reads of one unchanged file share one scan.
    const key = `${name}|${stamp}`;
    let scanning = this.chainScans.get(key);
    if (!scanning) {
      scanning = (async () => {
        const scan = new FileChainScan(name, this.ctx.signer);
        await this.scanLines(name, 0, info.size, (line, offset) => scan.line(line, offset), handle);
        const checked: CheckedChain = { stamp, chain: scan.result() };
        return this.chains.set(name, checked, chainBytes(name, checked)).chain;
      })().finally(() => this.chainScans.delete(key));
      this.chainScans.set(key, scanning);
    }
    return scanning;
  }

  /** A predecessor as it is now: its size, and the whole line where its last record should be. */
  private async predecessorState(claim: Predecessor, files: OpenFiles): Promise<PredecessorState> {
    const handle = await files.open(claim.file);
    if (!handle) return { exists: false };
    const { size } = await handle.stat();
    let lastRecord: Buffer | null = null;
    if (size >= claim.bytes && claim.last < claim.bytes) {
      const bytes = await readRange(handle, claim.last, claim.bytes - claim.last);
      const whole = bytes.length === claim.bytes - claim.last && bytes.indexOf(0x0a) === bytes.length - 1;
      lastRecord = whole ? bytes.subarray(0, -1) : null;
    }
    return { exists: true, bytes: size, lastRecord };
  }

  /** A version 3 header with the link it continues from; null for anything else. */
  private async headerOf(name: string, files: OpenFiles): Promise<{ prev: Predecessor | null; p: string } | null> {
    const handle = await files.open(name);
    if (!handle) return null;
    const start = await readRange(handle, 0, HEADER_READ_BYTES);
    const end = start.indexOf(0x0a);
    const header = end === -1 ? null : chainHeader(parseFileHeader(start.subarray(0, end)));
    return header ? { prev: header.prev, p: header.p } : null;
  }

  /** The same writer's nearest later file in the directory. */
  private nextOfWriter(name: string): string | null {
    const me = parseTraceFileName(name);
    if (!me) return null;
    let next: string | null = null;
    let nextSequence = Number.POSITIVE_INFINITY;
    for (const other of this.ctx.index.files.keys()) {
      const parsed = parseTraceFileName(other);
      if (parsed && parsed.writerId === me.writerId && parsed.sequence > me.sequence && parsed.sequence < nextSequence) {
        next = other;
        nextSequence = parsed.sequence;
      }
    }
    return next;
  }

  /**
   * What the chain says about one file: its own breaks, its hand-over from the writer's
   * previous file (missing within retention, cut, altered), and how its own end compares
   * with what the writer's next file vouches for. Null when the file is gone.
   */
  private async fileReport(name: string, files: OpenFiles): Promise<FileReport | null> {
    const { now, retentionMs } = this.ctx;
    const chain = await this.fileChain(name, files);
    if (!chain) return null;
    const findings = [...chain.findings];
    let unvouched: FileReport['unvouched'] = null;
    const header = chain.header;
    const nowMs = now();
    if (header?.prev) {
      const { finding } = checkSuccession(header.prev, header.p, await this.predecessorState(header.prev, files), nowMs, retentionMs);
      if (finding) findings.push(finding);
    }
    const next = header ? this.nextOfWriter(name) : null;
    const following = next ? await this.headerOf(next, files) : null;
    if (following?.prev) {
      // The next file continues from this one, or from one in between that is gone.
      const state = following.prev.file === name ? await this.predecessorState(following.prev, files) : ({ exists: false } as const);
      const succession = checkSuccession(following.prev, following.p, state, nowMs, retentionMs);
      if (succession.finding) findings.push(succession.finding);
      unvouched = succession.unvouched;
    }
    return { chain, findings, unvouched };
  }

  /**
   * Own events are indexed as written, never rescanned; if lines were removed or inserted
   * since, their offsets are stale. The file is then left (the writer's current one, when it
   * changed under it) or indexed again from disk.
   */
  private async reindex(names: string[]): Promise<void> {
    for (const name of names) {
      if (!(await this.writer.recheck(name))) this.ctx.index.dropFile(name);
    }
    await this.refresh();
  }

  /**
   * The first `limit` events of the run after `after` within retention that `visibleTo` may
   * see, in event order, and whether more follow: one more than the page is kept while the
   * index and the evicted files that may hold the run are gone through, so memory holds a
   * page, never the run. A page ends early once its events delivered `TRACE_PAGE_CHARS`.
   */
  private async locatePage(runId: string, after: FileCursor | null, limit: number, visibleTo: string | null): Promise<{ locations: EventLocation[]; more: boolean }> {
    const minAtMs = this.ctx.now() - this.ctx.retentionMs;
    const window = new SmallestLocations(limit + 1);
    const offer = (location: EventLocation) => {
      if (location.atMs < minAtMs || location.summary.runId !== runId || !visible(location.summary, visibleTo)) return;
      if (after && eventOrder(location, after) <= 0) return;
      window.offer(location);
    };
    for (const location of this.ctx.index.runs.get(runId) ?? []) offer(location);
    await this.scanEvicted(minAtMs, offer, runId, visibleTo);
    const candidates = window.list();
    const taken = pageLength(candidates.map((location) => location.summary.chars), limit);
    return { locations: candidates.slice(0, taken), more: candidates.length > taken };
  }

  /** What the evicted files hold of a run within retention: how many events, and the first of them (whose caller opened it). */
  async evictedStanding(runId: string): Promise<{ events: number; first: EventLocation | null }> {
    const minAtMs = this.ctx.now() - this.ctx.retentionMs;
    let events = 0;
    let first: EventLocation | null = null;
    await this.scanEvicted(minAtMs, (location) => {
      if (location.summary.runId !== runId || location.atMs < minAtMs) return;
      events++;
      if (!first || eventOrder(location, first) < 0) first = location;
    }, runId);
    return { events, first };
  }
}

/** Where a page of a run ended: the position of its last event (`eventOrder`'s fields). */
type FileCursor = Pick<EventLocation, 'atMs' | 'fileCreatedMs' | 'file' | 'offset'>;

const FILE_CURSOR = /^f1\.(-?\d{1,16})\.(-?\d{1,16})\.(\d{1,16})\.(.{1,200})$/;

function encodeFileCursor(location: FileCursor): string {
  return encodeEventCursor(`f1.${location.atMs}.${location.fileCreatedMs}.${location.offset}.${location.file}`);
}

/** A position only: the file named is compared with, never opened. */
function decodeFileCursor(cursor: string): FileCursor {
  let parsed: FileCursor | null = null;
  decodeEventCursor(cursor, (text) => {
    const match = FILE_CURSOR.exec(text);
    if (!match || parseTraceFileName(match[4]!) === null) return false;
    parsed = { atMs: Number(match[1]), fileCreatedMs: Number(match[2]), offset: Number(match[3]), file: match[4]! };
    return true;
  });
  return parsed!;
}

/** The `size` smallest locations offered, in event order: a page and one more, whatever the run holds. */
class SmallestLocations {
  private readonly kept: EventLocation[] = [];

  constructor(private readonly size: number) {}

  offer(location: EventLocation): void {
    const kept = this.kept;
    if (kept.length === this.size && eventOrder(location, kept[kept.length - 1]!) >= 0) return;
    let low = 0;
    let high = kept.length;
    while (low < high) {
      const mid = (low + high) >> 1;
      if (eventOrder(kept[mid]!, location) < 0) low = mid + 1;
      else high = mid;
    }
    kept.splice(low, 0, location);
    if (kept.length > this.size) kept.pop();
  }

  list(): EventLocation[] {
    return this.kept;
  }
}

function isGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** The event an event line holds; null when the line is not one (a file changed under its index). */
function parseEventLine(line: Buffer): StoredEvent<RecordRef> | null {
  try {
    const event = (JSON.parse(line.toString('utf8')) as { event?: unknown }).event;
    return isStoredEvent<RecordRef>(event) ? event : null;
  } catch {
    return null;
  }
}

async function readRange(handle: FileHandle, offset: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(buffer, done, length - done, offset + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return buffer.subarray(0, done);
}
