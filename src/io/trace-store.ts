import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import * as fsp from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { BaseLogger } from 'pino';
import { BoundedMemo } from '../core/memo.js';
import { ProblemError } from '../errors.js';
import { isSafeId } from '../../schemas/ids.js';
import {
  BLOB_PREFIX,
  blobLine,
  DATA_PREFIX,
  dataLine,
  EVENT_PREFIX,
  eventLine,
  fileHeaderLine,
  makeWriterId,
  parseBlobLine,
  parseDataLine,
  parseTraceFileName,
  RecordMemo,
  sha256Hex,
  startsWith,
  traceFileName,
  type RecordRef,
} from './trace-format.js';
import {
  decodeCursor,
  encodeCursor,
  eventOrder,
  tally,
  TraceIndex,
  type EventLocation,
  type RunTally,
  type EventSummary,
  type IndexedFile,
  type RunFilter,
  type RunPosition,
  type RunSummary,
} from './trace-index.js';

export type { RunSummary } from './trace-index.js';

export type TraceOutcome = 'delivered' | 'not-modified' | 'failed';
export const TRACE_OUTCOMES: readonly TraceOutcome[] = ['delivered', 'not-modified', 'failed'];

export interface TraceSubject {
  kind: 'persona' | 'worker';
  id: string;
}

export interface TraceBlock {
  kind: string;
  authority: string;
  cacheClass: string;
  source: string;
  chars: number;
  approxTokens: number;
  sha256: string;
}

export interface TraceSource {
  path: string;
  size: number;
  mtimeMs: number;
  /** Of the bytes read: the whole file unless `truncated`. */
  sha256: string;
  truncated?: boolean;
  /** How the file was read, so a later check can read it the same way. */
  maxBytes?: number;
  keep?: 'head' | 'tail';
}

/** A brain path a compile looked for and found missing. */
export interface TraceAbsent {
  path: string;
}

/** A directory listing a compile relied on: its files' count and digest, and their names when few. */
export interface TraceListing {
  path: string;
  count: number;
  sha256: string;
  names?: string[];
}

/** One delivery (or failed compile) of a run, as the deliver path hands it to the store. */
export interface TraceEventInput {
  runId: string;
  /** ISO 8601, server clock. */
  at: string;
  route: string;
  subject: TraceSubject;
  surface?: string;
  /** The HTTP status delivered. */
  status: number;
  outcome: TraceOutcome;
  /** Identifiers and options only: never tokens, never prompt text. */
  request: Record<string, unknown>;
  blocks?: TraceBlock[];
  /** Exact text pieces: `system.join('')` is the delivered systemPrompt, `input.join('')` the inputPrompt. */
  segments?: { system: string[]; input: string[] };
  promptSha256?: string;
  /** null when there is no input prompt. */
  inputSha256?: string | null;
  budget?: object;
  cache?: object;
  tokens?: object;
  redactions?: { email: number; phone: number };
  warnings?: string[];
  sources?: TraceSource[];
  /** So a later check can tell a file that appeared since (stored inline). */
  absent?: TraceAbsent[];
  /** So a later check can tell files added to or removed from a directory since (stored inline). */
  listings?: TraceListing[];
  error?: { code: string; status: number; detail: string };
  timing?: Record<string, number>;
}

export interface TraceSegmentView {
  sha256: string;
  /** Offset of this piece in the rebuilt prompt, in UTF-16 code units (JavaScript string indices). */
  offset: number;
  chars: number;
}

/** A stored event as `readRun` returns it: the prompts rebuilt from their segments and checked. */
export interface TraceEventView extends Omit<TraceEventInput, 'segments'> {
  /** Characters delivered (system + input prompt). */
  chars: number;
  segments?: { system: TraceSegmentView[]; input: TraceSegmentView[] };
  systemPrompt: string | null;
  inputPrompt: string | null;
  /** Rebuilt prompts match the recorded digests; null when the event carries no prompt. */
  verified: boolean | null;
}

/** An event as written: segments, block summaries, sources and the cache plan by reference to records of the same file. */
interface StoredEvent extends Omit<TraceEventInput, 'segments' | 'blocks' | 'sources' | 'cache'> {
  chars: number;
  segments?: { system: RecordRef[]; input: RecordRef[] };
  blocks?: RecordRef[];
  sources?: RecordRef[];
  cache?: RecordRef;
}

export interface ListRunsQuery extends RunFilter {
  limit?: number;
  cursor?: string;
}

export interface RunPage {
  runs: RunSummary[];
  nextCursor: string | null;
}

export interface TraceStoreStats {
  /** Appends that resolved (durable). */
  appends: number;
  /** Appends that rejected. */
  rejected: number;
  /** Group commits: one write and one fsync each. */
  batches: number;
  /** Every fsync/fdatasync issued, including file creation and directory syncs. */
  fsyncs: number;
  /** Bytes written, headers included. */
  bytes: number;
  largestBatch: number;
  blobsWritten: number;
  /** Segments that cost nothing because their text was already in the file. */
  blobsReused: number;
  /** Data records (block summaries, sources, cache plans) written, and references to ones already in the file. */
  dataWritten: number;
  dataReused: number;
  filesCreated: number;
  filesDeleted: number;
  /** Lines skipped on read because they could not be parsed (a torn tail after a crash). */
  unreadableLines: number;
  failures: number;
  /** Events held in the in-memory index (at most `maxIndexedEvents`, plus the file being written). */
  indexedEvents: number;
  state: 'ok' | 'failed' | 'closed';
}

export type TraceFs = Pick<typeof fsp, 'access' | 'chmod' | 'mkdir' | 'open' | 'readdir' | 'stat' | 'unlink'>;

export interface TraceStoreOptions {
  /** Events older than this are hidden from reads and their files deleted by the sweep. */
  retentionMs: number;
  /** The clock for file names, retention and sealing (tests move it). */
  now?: () => number;
  /** At most this many events per group commit. */
  maxBatchEvents?: number;
  /** Start a new file once the current one is this large. */
  rotateBytes?: number;
  /** Start a new file once the current one is this old; also bounds how long a writer may append to a file. */
  rotateMs?: number;
  sweepIntervalMs?: number;
  /** While failing, how often to try again (on an append, a health check or a timer). */
  retryIntervalMs?: number;
  writerId?: string;
  /**
   * At most this many events are indexed in memory (≈ 600 bytes each); older complete
   * files are read from disk when a run or a listing needs them. See docs/traces.md.
   */
  maxIndexedEvents?: number;
  /** File system functions; tests inject failures here. */
  fs?: TraceFs;
  /** Called once per append with the time it took to become durable (or to fail). */
  observeWrite?: (seconds: number, ok: boolean) => void;
}

export interface TraceStore {
  readonly dir: string;
  readonly writerId: string;
  /** Resolves once the event is durable (fsync'd); rejects with `CC_TRACE_UNAVAILABLE` otherwise. */
  append(event: TraceEventInput): Promise<void>;
  /** The run's events in order, prompts rebuilt and verified; null for an unknown (or expired) run. */
  readRun(runId: string): Promise<TraceEventView[] | null>;
  /** Runs newest first, described by their latest event. */
  listRuns(query?: ListRunsQuery): Promise<RunPage>;
  /** Resolves when appends can be made durable; rejects with the reason otherwise. */
  health(): Promise<void>;
  /** Deletes files whose newest event is older than the retention. */
  sweep(): Promise<{ deletedFiles: number }>;
  stats(): TraceStoreStats;
  /** Flushes pending appends, stops timers and closes files. */
  close(): Promise<void>;
}

export type TraceLog = Pick<BaseLogger, 'info' | 'warn' | 'error'>;

interface WriterFile {
  name: string;
  path: string;
  handle: FileHandle;
  size: number;
  createdMs: number;
  ino: number;
  dev: number;
  /** Blobs already in this file: sha256 → the JSON of a reference to it. */
  blobs: Map<string, string>;
  /** Data records already in this file: sha256 → the JSON of a reference to it. */
  data: Map<string, string>;
  entry: IndexedFile;
}

interface Pending {
  event: TraceEventInput;
  startedAt: number;
  resolve(): void;
  reject(error: unknown): void;
}

const HOUR = 3_600_000;
/** How far apart replica clocks and a writer's last age check may be before a file counts as sealed. */
const SEAL_GRACE_MS = 60_000;
const SCAN_CHUNK = 1 << 20;
const MAX_PAGE = 100;
const DIGEST_MEMO_SIZE = 512;
/** Characters of segment text the digest memo may hold (its keys are the texts themselves). */
const DIGEST_MEMO_CHARS = 4_000_000;
export const DEFAULT_MAX_INDEXED_EVENTS = 10_000;

/** How an event's repeated parts become references, each given as its JSON text; see `eventRecord`. */
interface Refs {
  blob(text: string): string;
  data(entry: { json: string; sha: string }): string;
  block(block: TraceBlock): string;
  source(source: TraceSource): string;
  json(value: object): string;
}

const noop = () => {};

/**
 * The embedded trace store: append-only JSONL files under `dir`, one writer per file,
 * group-committed (all appends queued during an fsync share the next one), segment texts
 * stored once per file by sha256. See docs/traces.md for the format and its guarantees.
 */
export function createTraceStore(dir: string, log: TraceLog, options: TraceStoreOptions): TraceStore {
  const fs = options.fs ?? fsp;
  const now = options.now ?? Date.now;
  const retentionMs = options.retentionMs;
  const rotateMs = options.rotateMs ?? Math.max(1000, Math.min(HOUR, Math.floor(retentionMs / 4)));
  const rotateBytes = options.rotateBytes ?? 32 * 1024 * 1024;
  const maxBatchEvents = options.maxBatchEvents ?? 1024;
  const retryIntervalMs = options.retryIntervalMs ?? 1000;
  const sweepIntervalMs = options.sweepIntervalMs ?? Math.max(1000, Math.min(10 * 60_000, Math.floor(retentionMs / 10)));
  const writerId = options.writerId ?? makeWriterId(hostname(), process.pid, randomBytes(4).toString('hex'));
  const observeWrite = options.observeWrite ?? noop;

  const index = new TraceIndex(options.maxIndexedEvents ?? DEFAULT_MAX_INDEXED_EVENTS);
  // Stable segments arrive as the same strings on every call; hashing them once saves most of the CPU an append costs.
  // Bounded by characters too: the keys are the texts, and a topic block alone can be 100 KB.
  const digests = new BoundedMemo<string, string>(DIGEST_MEMO_SIZE, DIGEST_MEMO_CHARS);
  const digest = (text: string): string => digests.get(text) ?? digests.set(text, sha256Hex(text), text.length);
  // Block summaries and source records repeat on every call with new objects; these find their
  // JSON and sha256 by comparing fields, without serialising them again.
  const blockMemo = new RecordMemo<TraceBlock>(
    (block) => block.sha256,
    (a, b) =>
      a.kind === b.kind && a.authority === b.authority && a.cacheClass === b.cacheClass && a.source === b.source && a.chars === b.chars && a.approxTokens === b.approxTokens,
    ({ kind, authority, cacheClass, source, chars, approxTokens, sha256 }) => ({ kind, authority, cacheClass, source, chars, approxTokens, sha256 }),
  );
  const sourceMemo = new RecordMemo<TraceSource>(
    (source) => source.sha256,
    (a, b) => a.path === b.path && a.size === b.size && a.mtimeMs === b.mtimeMs && a.truncated === b.truncated && a.maxBytes === b.maxBytes && a.keep === b.keep,
    ({ path, size, mtimeMs, sha256, truncated, maxBytes, keep }) => {
      const picked: TraceSource = { path, size, mtimeMs, sha256 };
      if (truncated !== undefined) picked.truncated = truncated;
      if (maxBytes !== undefined) picked.maxBytes = maxBytes;
      if (keep !== undefined) picked.keep = keep;
      return picked;
    },
  );
  const counters: Omit<TraceStoreStats, 'state' | 'indexedEvents'> = {
    appends: 0,
    rejected: 0,
    batches: 0,
    fsyncs: 0,
    bytes: 0,
    largestBatch: 0,
    blobsWritten: 0,
    blobsReused: 0,
    dataWritten: 0,
    dataReused: 0,
    filesCreated: 0,
    filesDeleted: 0,
    unreadableLines: 0,
    failures: 0,
  };

  let file: WriterFile | null = null;
  let openingName: string | null = null;
  let sequence = 0;
  const queue: Pending[] = [];
  let flushing: Promise<void> | null = null;
  let failure: { reason: string; since: number; lastAttemptAt: number } | null = null;
  let recovering: Promise<boolean> | null = null;
  let retryTimer: NodeJS.Timeout | null = null;
  let refreshing: Promise<void> | null = null;
  let closed = false;
  let closing: Promise<void> | null = null;
  let warnedChmod = false;

  const sweepTimer = setInterval(() => {
    sweep().catch((error: unknown) => log.warn({ err: error }, 'trace retention sweep failed'));
  }, sweepIntervalMs);
  sweepTimer.unref();

  // ---- writing -------------------------------------------------------------------------

  async function ensureDir(): Promise<void> {
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    try {
      await fs.chmod(dir, 0o700);
    } catch (error) {
      // A volume root owned by someone else: writable is what matters; say so once.
      if ((error as NodeJS.ErrnoException).code !== 'EPERM' || warnedChmod) throw error;
      warnedChmod = true;
      log.warn({ dir }, 'cannot chmod the trace directory to 0700; check its owner and mode');
    }
  }

  async function writeAll(handle: FileHandle, data: Buffer, position: number): Promise<void> {
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await handle.write(data, done, data.length - done, position + done);
      if (bytesWritten <= 0) throw Object.assign(new Error('short write'), { code: 'EIO' });
      done += bytesWritten;
    }
  }

  async function syncDir(): Promise<void> {
    const handle = await fs.open(dir, constants.O_RDONLY);
    try {
      await handle.sync();
      counters.fsyncs++;
    } finally {
      await handle.close();
    }
  }

  /** A file unlinked or a directory swapped under us would take our acknowledged writes with it. */
  async function assertInPlace(target: WriterFile): Promise<void> {
    const info = await fs.stat(target.path);
    if (info.ino !== target.ino || info.dev !== target.dev) {
      throw Object.assign(new Error('the trace file was replaced'), { code: 'EREPLACED' });
    }
  }

  function retire(target: WriterFile): void {
    if (file === target) file = null;
    target.entry.complete = true;
    target.handle.close().catch(noop);
  }

  /** Opens a fresh file (exclusive create, 0600), durable with its directory entry before use. */
  async function rotate(): Promise<WriterFile> {
    if (file) retire(file);
    await ensureDir();
    const createdMs = now();
    const name = traceFileName(createdMs, writerId, ++sequence);
    const path = join(dir, name);
    openingName = name;
    const entry = index.file(name, createdMs, true);
    let handle: FileHandle | null = null;
    try {
      handle = await fs.open(path, 'wx', 0o600);
      await handle.chmod(0o600);
      const header = Buffer.from(fileHeaderLine(writerId, createdMs));
      await writeAll(handle, header, 0);
      await handle.datasync();
      counters.fsyncs++;
      await syncDir();
      const info = await handle.stat();
      entry.scannedBytes = header.length;
      counters.filesCreated++;
      counters.bytes += header.length;
      file = { name, path, handle, size: header.length, createdMs, ino: info.ino, dev: info.dev, blobs: new Map(), data: new Map(), entry };
      return file;
    } catch (error) {
      index.dropFile(name);
      if (handle) {
        await handle.close().catch(noop);
        // Retries while the disk is full must not leave an empty file behind each time.
        await fs.unlink(path).catch(noop);
      }
      throw error;
    } finally {
      openingName = null;
    }
  }

  async function writeBatch(batch: Pending[]): Promise<void> {
    let target = file;
    if (!target || target.size >= rotateBytes || now() - target.createdMs >= rotateMs) target = await rotate();
    const parts: Buffer[] = [];
    const freshBlobs = new Map<string, string>();
    const freshData = new Map<string, string>();
    const written: Array<{ offset: number; length: number; stored: StoredEvent }> = [];
    let position = target.size;
    const append = (line: string): [number, number] => {
      const bytes = Buffer.from(line);
      const at: [number, number] = [position, bytes.length];
      position += bytes.length;
      parts.push(bytes);
      return at;
    };
    const refs: Refs = {
      blob(text) {
        const sha = digest(text);
        let ref = target.blobs.get(sha) ?? freshBlobs.get(sha);
        if (ref) counters.blobsReused++;
        else {
          freshBlobs.set(sha, (ref = refJson(sha, append(blobLine(sha, text)))));
          counters.blobsWritten++;
        }
        return ref;
      },
      data({ json, sha }) {
        let ref = target.data.get(sha) ?? freshData.get(sha);
        if (ref) counters.dataReused++;
        else {
          freshData.set(sha, (ref = refJson(sha, append(dataLine(sha, json)))));
          counters.dataWritten++;
        }
        return ref;
      },
      block: (block) => refs.data(blockMemo.get(block)),
      source: (source) => refs.data(sourceMemo.get(source)),
      json(value) {
        const json = JSON.stringify(value);
        return refs.data({ json, sha: digest(json) });
      },
    };
    for (const { event } of batch) {
      const { stored, line } = eventRecord(event, refs);
      const at = append(line);
      written.push({ offset: at[0], length: at[1], stored });
    }
    const bytes = Buffer.concat(parts);
    try {
      await writeAll(target.handle, bytes, target.size);
      await target.handle.datasync();
      counters.fsyncs++;
    } catch (error) {
      await discardTail(target);
      throw error;
    }
    await assertInPlace(target);
    target.size = position;
    target.entry.scannedBytes = position;
    for (const [sha, ref] of freshBlobs) target.blobs.set(sha, ref);
    for (const [sha, ref] of freshData) target.data.set(sha, ref);
    for (const { offset, length, stored } of written) index.add(target.entry, locate(target.entry, offset, length, stored));
    index.evictOverBudget();
    counters.batches++;
    counters.bytes += bytes.length;
    counters.largestBatch = Math.max(counters.largestBatch, batch.length);
  }

  /**
   * A batch whose write or fsync failed was answered with 503s, so none of its lines may
   * be read back as delivered later: cut the file back to its last durable size. Best
   * effort (truncating frees space, so it works on a full disk); if it fails too, the file
   * is retired anyway and the residue is documented in docs/traces.md.
   */
  async function discardTail(target: WriterFile): Promise<void> {
    try {
      await target.handle.truncate(target.size);
      await target.handle.datasync();
      counters.fsyncs++;
    } catch (error) {
      log.error({ err: error, file: target.name }, 'could not cut a failed batch from a trace file');
    }
  }

  function settle(batch: Pending[], error: unknown): void {
    const end = performance.now();
    for (const pending of batch) {
      observeWrite((end - pending.startedAt) / 1000, error === null);
      if (error === null) {
        counters.appends++;
        pending.resolve();
      } else {
        counters.rejected++;
        pending.reject(error);
      }
    }
  }

  async function flushLoop(): Promise<void> {
    try {
      while (queue.length > 0) {
        const batch = queue.splice(0, maxBatchEvents);
        try {
          await writeBatch(batch);
          settle(batch, null);
        } catch (error) {
          fail(error);
          settle([...batch, ...queue.splice(0)], unavailable(failure!.reason, error));
        }
      }
    } finally {
      flushing = null;
    }
  }

  function fail(error: unknown): void {
    const reason = describeWriteFailure(error);
    const first = failure === null;
    failure = { reason, since: now(), lastAttemptAt: performance.now() };
    counters.failures++;
    if (file) retire(file);
    if (!first) return;
    log.error({ err: error }, 'trace store cannot make events durable; appends fail until it recovers');
    retryTimer = setInterval(() => void recover(), retryIntervalMs);
    retryTimer.unref();
  }

  function recover(): Promise<boolean> {
    if (!failure) return Promise.resolve(true);
    if (closed) return Promise.resolve(false);
    recovering ??= (async () => {
      const down = failure!;
      down.lastAttemptAt = performance.now();
      try {
        await rotate();
        failure = null;
        if (retryTimer) clearInterval(retryTimer);
        retryTimer = null;
        log.info({ downMs: Math.max(0, now() - down.since) }, 'trace store recovered');
        return true;
      } catch (error) {
        down.reason = describeWriteFailure(error);
        return false;
      } finally {
        recovering = null;
      }
    })();
    return recovering;
  }

  function retryDue(): boolean {
    return failure !== null && performance.now() - failure.lastAttemptAt >= retryIntervalMs;
  }

  async function append(event: TraceEventInput): Promise<void> {
    if (closed) throw new ProblemError('CC_TRACE_UNAVAILABLE', 'The trace store is closed.');
    checkEvent(event);
    const startedAt = performance.now();
    if (failure && !(retryDue() && (await recover()))) {
      counters.rejected++;
      observeWrite((performance.now() - startedAt) / 1000, false);
      throw unavailable(failure?.reason ?? 'trace store closed', undefined);
    }
    return new Promise<void>((resolve, reject) => {
      queue.push({ event, startedAt, resolve, reject });
      flushing ??= flushLoop();
    });
  }

  async function health(): Promise<void> {
    if (closed) throw new Error('trace store is closed');
    if (failure) {
      if (retryDue()) await recover();
      if (failure) throw new Error(failure.reason);
      return;
    }
    const current = file;
    try {
      if (current) await assertInPlace(current);
      else {
        await ensureDir();
        await fs.access(dir, constants.W_OK | constants.X_OK);
      }
    } catch (error) {
      // A file removed under us: fail now so the retry timer recovers without waiting for traffic.
      if (current && file === current && !flushing && !failure) fail(error);
      throw new Error(describeWriteFailure(error));
    }
  }

  // ---- reading -------------------------------------------------------------------------

  function locate(entry: IndexedFile, offset: number, length: number, stored: StoredEvent): EventLocation {
    return { file: entry.name, fileCreatedMs: entry.createdMs, offset, length, atMs: Date.parse(stored.at), summary: summarize(stored) };
  }

  /**
   * The event a line holds, or null (counted as unreadable unless it is a blob, data or
   * header line). With `needle`, an event line without those bytes is skipped unparsed.
   */
  function lineEvent(entry: IndexedFile, line: Buffer, offset: number, length: number, count: boolean, needle?: Buffer): EventLocation | null {
    if (!startsWith(line, EVENT_PREFIX)) {
      if (count && !startsWith(line, BLOB_PREFIX) && !startsWith(line, DATA_PREFIX) && !line.toString('utf8', 0, 16).startsWith('{"t":"file"')) {
        counters.unreadableLines++;
      }
      return null;
    }
    if (needle && line.indexOf(needle) === -1) return null;
    try {
      const stored = (JSON.parse(line.toString('utf8')) as { event?: unknown }).event;
      if (isStoredEvent(stored)) return locate(entry, offset, length, stored);
    } catch {
      // counted below
    }
    if (count) counters.unreadableLines++;
    return null;
  }

  /** Calls `visit` for each complete line from `from` up to `size`; returns where the last complete line ends. */
  async function scanLines(name: string, from: number, size: number, visit: (line: Buffer, offset: number, length: number) => void): Promise<number> {
    const handle = await fs.open(join(dir, name), 'r');
    try {
      const chunk = Buffer.allocUnsafe(SCAN_CHUNK);
      let position = from;
      let carry = Buffer.alloc(0);
      while (position + carry.length < size) {
        const want = Math.min(chunk.length, size - position - carry.length);
        const { bytesRead } = await handle.read(chunk, 0, want, position + carry.length);
        if (bytesRead === 0) break;
        const data = carry.length > 0 ? Buffer.concat([carry, chunk.subarray(0, bytesRead)]) : chunk.subarray(0, bytesRead);
        let start = 0;
        for (let newline = data.indexOf(0x0a, start); newline !== -1; newline = data.indexOf(0x0a, start)) {
          visit(data.subarray(start, newline), position + start, newline - start + 1);
          start = newline + 1;
        }
        position += start;
        carry = Buffer.from(data.subarray(start));
      }
      return position;
    } finally {
      await handle.close();
    }
  }

  /** Reads another writer's file from where the last scan stopped; an incomplete last line waits for next time. */
  async function scanFile(entry: IndexedFile, size: number): Promise<void> {
    entry.scannedBytes = await scanLines(entry.name, entry.scannedBytes, size, (line, offset, length) => {
      const location = lineEvent(entry, line, offset, length, true);
      if (location) index.add(entry, location);
    });
  }

  /**
   * The events of evicted files (those no longer held in memory), read from disk: a read
   * of every such file within retention or, for one run, of those whose run filter may
   * hold it. A vanished file holds nothing.
   */
  async function scanEvicted(minAtMs: number, visit: (location: EventLocation) => void, runId?: string): Promise<void> {
    // Event lines without the run id are skipped unparsed.
    const needle = runId === undefined ? undefined : Buffer.from(`"runId":${JSON.stringify(runId)}`);
    for (const entry of index.evictedFiles(minAtMs, runId)) {
      try {
        await scanLines(entry.name, 0, entry.scannedBytes, (line, offset, length) => {
          const location = lineEvent(entry, line, offset, length, false, needle);
          if (location) visit(location);
        });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }

  async function listTraceFiles(): Promise<string[]> {
    try {
      return (await fs.readdir(dir)).filter((name) => parseTraceFileName(name) !== null);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return [];
      throw error;
    }
  }

  async function doRefresh(): Promise<void> {
    const names = await listTraceFiles();
    const present = new Set(names);
    const sealedBefore = now() - rotateMs - SEAL_GRACE_MS;
    for (const name of names) {
      const known = index.files.get(name);
      if (known && (known.own || known.complete)) continue;
      const info = await fs.stat(join(dir, name)).catch(() => null);
      if (!info) continue;
      const entry = known ?? index.file(name, parseTraceFileName(name)!.createdMs, false);
      if (info.size > entry.scannedBytes) await scanFile(entry, info.size);
      // Writers rotate before a file is rotateMs old, so an older file never grows again.
      if (entry.createdMs < sealedBefore) entry.complete = true;
    }
    index.evictOverBudget();
    for (const name of [...index.files.keys()]) {
      if (!present.has(name) && name !== file?.name && name !== openingName) index.dropFile(name);
    }
  }

  function refresh(): Promise<void> {
    refreshing ??= doRefresh().finally(() => {
      refreshing = null;
    });
    return refreshing;
  }

  function readFailure(error: unknown): ProblemError {
    return new ProblemError('CC_TRACE_UNAVAILABLE', 'Traces cannot be read right now.', { cause: error });
  }

  async function readRun(runId: string): Promise<TraceEventView[] | null> {
    if (!isSafeId(runId)) return null;
    try {
      await refresh();
    } catch (error) {
      throw readFailure(error);
    }
    const minAtMs = now() - retentionMs;
    const locations = index.locations(runId, minAtMs);
    try {
      const found: EventLocation[] = [];
      await scanEvicted(minAtMs, (location) => {
        if (location.summary.runId === runId && location.atMs >= minAtMs) found.push(location);
      }, runId);
      if (found.length > 0) {
        locations.push(...found);
        locations.sort(eventOrder);
      }
    } catch (error) {
      throw readFailure(error);
    }
    if (locations.length === 0) return null;
    const handles = new Map<string, FileHandle | null>();
    const open = async (name: string): Promise<FileHandle | null> => {
      if (!handles.has(name)) {
        handles.set(
          name,
          await fs.open(join(dir, name), 'r').catch((error: NodeJS.ErrnoException) => {
            if (error.code === 'ENOENT') return null;
            throw error;
          }),
        );
      }
      return handles.get(name)!;
    };
    try {
      const events: TraceEventView[] = [];
      // Records repeat from event to event of a run; each is read and checked once.
      const known = new Map<string, unknown>();
      for (const location of locations) {
        const handle = await open(location.file);
        if (!handle) continue;
        const stored = (JSON.parse((await readRange(handle, location.offset, location.length)).toString('utf8')) as { event: StoredEvent }).event;
        const record = async ([sha, offset, length]: RecordRef, parse: (line: string, sha: string) => unknown) => {
          const key = `${location.file}:${offset}`;
          if (!known.has(key)) known.set(key, parse((await readRange(handle, offset, length)).toString('utf8'), sha));
          return known.get(key);
        };
        const view = await rebuild(stored, {
          blob: async (ref) => (await record(ref, parseBlobLine)) as string | null,
          data: (ref) => record(ref, parseDataLine),
        });
        counters.unreadableLines += view.unreadable;
        events.push(view.event);
      }
      return events.length > 0 ? events : null;
    } catch (error) {
      throw error instanceof ProblemError ? error : readFailure(error);
    } finally {
      for (const handle of handles.values()) await handle?.close().catch(noop);
    }
  }

  /**
   * The page when memory decides it: every evicted event is at or before the newest
   * evicted file's newest event, so runs listed from memory after that instant (one more
   * than the page, to know there are more) are exactly the newest; only their event
   * counts may miss events in evicted files, found through the run filters. Null otherwise.
   */
  async function pageFromMemory(limit: number, filter: RunFilter, minAtMs: number, after: RunPosition | null): Promise<{ runs: RunSummary[]; more: boolean } | null> {
    const evicted = index.evictedFiles(minAtMs);
    const candidates = index.list(limit + 1, filter, minAtMs, after).runs;
    if (evicted.length === 0) return { runs: candidates.slice(0, limit), more: candidates.length > limit };
    const newestEvicted = Math.max(...evicted.map((entry) => entry.newestAtMs));
    if (candidates.length <= limit || Date.parse(candidates[limit]!.at) <= newestEvicted) return null;
    const runs = candidates.slice(0, limit);
    for (const run of runs) {
      await scanEvicted(minAtMs, (location) => {
        if (location.summary.runId === run.runId && location.atMs >= minAtMs) run.events++;
      }, run.runId);
    }
    return { runs, more: true };
  }

  /** The page from memory and a scan of every evicted file within retention. */
  async function pageFromAll(limit: number, filter: RunFilter, minAtMs: number, after: RunPosition | null): Promise<{ runs: RunSummary[]; more: boolean }> {
    const older = new Map<string, RunTally>();
    await scanEvicted(minAtMs, (location) => tally(older, location, minAtMs));
    return index.list(limit, filter, minAtMs, after, older);
  }

  async function listRuns(query: ListRunsQuery = {}): Promise<RunPage> {
    const limit = Math.max(1, Math.min(MAX_PAGE, Math.floor(query.limit ?? 20)));
    let after = null;
    if (query.cursor !== undefined) {
      after = decodeCursor(query.cursor);
      if (!after) {
        throw new ProblemError('CC_VALIDATION_FAILED', '/query/cursor: not a cursor this service issued', {
          errors: [{ path: '/query/cursor', message: 'not a cursor this service issued' }],
        });
      }
    }
    try {
      await refresh();
    } catch (error) {
      throw readFailure(error);
    }
    const filter: RunFilter = {};
    if (query.persona !== undefined) filter.persona = query.persona;
    if (query.worker !== undefined) filter.worker = query.worker;
    if (query.status !== undefined) filter.status = query.status;
    if (query.outcome !== undefined) filter.outcome = query.outcome;
    const minAtMs = now() - retentionMs;
    let page: { runs: RunSummary[]; more: boolean };
    try {
      page = (await pageFromMemory(limit, filter, minAtMs, after)) ?? (await pageFromAll(limit, filter, minAtMs, after));
    } catch (error) {
      throw readFailure(error);
    }
    const { runs, more } = page;
    const last = runs[runs.length - 1];
    return { runs, nextCursor: more && last ? encodeCursor({ atMs: Date.parse(last.at), runId: last.runId }) : null };
  }

  // ---- retention and lifecycle ---------------------------------------------------------

  async function sweep(): Promise<{ deletedFiles: number }> {
    await refresh();
    const nowMs = now();
    const cutoff = nowMs - retentionMs;
    const sealedBefore = nowMs - rotateMs - SEAL_GRACE_MS;
    // An idle file past retention is retired, so an idle service deletes it too.
    if (file && !flushing && file.entry.newestAtMs < cutoff) retire(file);
    let deletedFiles = 0;
    for (const entry of [...index.files.values()]) {
      if (entry.name === file?.name || entry.name === openingName) continue;
      // Another writer may still append to a file younger than rotateMs (plus clock skew).
      if (entry.newestAtMs >= cutoff || (!entry.own && entry.createdMs >= sealedBefore)) continue;
      try {
        await fs.unlink(join(dir, entry.name));
        deletedFiles++;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
      index.dropFile(entry.name);
    }
    counters.filesDeleted += deletedFiles;
    if (deletedFiles > 0) log.info({ deletedFiles }, 'trace retention sweep');
    return { deletedFiles };
  }

  function close(): Promise<void> {
    closing ??= (async () => {
      closed = true;
      clearInterval(sweepTimer);
      if (retryTimer) clearInterval(retryTimer);
      await flushing;
      await recovering;
      if (file) {
        const last = file;
        file = null;
        await last.handle.close().catch(noop);
      }
    })();
    return closing;
  }

  return {
    dir,
    writerId,
    append,
    readRun,
    listRuns,
    health,
    sweep,
    stats: () => ({ ...counters, indexedEvents: index.size, state: closed ? 'closed' : failure ? 'failed' : 'ok' }),
    close,
  };
}

// ---- pure helpers -------------------------------------------------------------------------

function unavailable(reason: string, cause: unknown): ProblemError {
  return new ProblemError('CC_TRACE_UNAVAILABLE', `The trace event could not be made durable: ${reason}.`, { cause });
}

const REASONS: Record<string, string> = {
  ENOSPC: 'disk full',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOENT: 'directory missing',
  ENOTDIR: 'not a directory',
  EEXIST: 'not a directory',
  EIO: 'I/O error',
  EREPLACED: 'trace file removed or replaced',
  EMFILE: 'too many open files',
};

/** A reason fit for a public readiness answer: the variable to check and the errno, never a path. */
export function describeWriteFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code ?? 'error';
  return `trace directory is not writable (TRACE_DIR): ${REASONS[code] ?? 'write failed'} (${code})`;
}

function checkEvent(event: TraceEventInput): void {
  const problem = eventProblem(event);
  if (problem) throw new ProblemError('CC_INTERNAL', `trace event is malformed: ${problem}`);
}

function eventProblem(event: TraceEventInput): string | null {
  if (typeof event !== 'object' || event === null) return 'not an object';
  if (typeof event.runId !== 'string' || !isSafeId(event.runId)) return 'runId is not a safe id';
  if (typeof event.at !== 'string' || !Number.isFinite(Date.parse(event.at))) return 'at is not an ISO time';
  if (typeof event.route !== 'string') return 'route is missing';
  const subject = event.subject as Partial<TraceSubject> | undefined;
  if (!subject || (subject.kind !== 'persona' && subject.kind !== 'worker') || typeof subject.id !== 'string') return 'subject is invalid';
  if (!Number.isInteger(event.status)) return 'status is not an integer';
  if (!TRACE_OUTCOMES.includes(event.outcome)) return 'outcome is invalid';
  if (typeof event.request !== 'object' || event.request === null) return 'request is missing';
  const segments = event.segments;
  if (segments !== undefined) {
    const texts = (list: unknown) => Array.isArray(list) && list.every((piece) => typeof piece === 'string');
    if (!texts(segments.system) || !texts(segments.input)) return 'segments must be arrays of strings';
  }
  return null;
}

function isStoredEvent(value: unknown): value is StoredEvent {
  const event = value as Partial<StoredEvent> | null;
  return (
    typeof event === 'object' &&
    event !== null &&
    typeof event.runId === 'string' &&
    typeof event.at === 'string' &&
    Number.isFinite(Date.parse(event.at)) &&
    typeof event.route === 'string' &&
    typeof event.subject?.id === 'string' &&
    typeof event.status === 'number' &&
    typeof event.outcome === 'string'
  );
}

/** `[sha256, offset, length]` as JSON: written once per record and file, reused by every event that refers to it. */
function refJson(sha: string, [offset, length]: [number, number]): string {
  return `["${sha}",${offset},${length}]`;
}

/**
 * The event as written. Segment texts, block summaries (only their summary fields: a
 * compiled block passed whole would store its content a second time), source records and
 * the cache plan become references to records stored once per file; the references are
 * spliced in as ready JSON, so only the event's own small fields are serialised per call.
 * `stored` holds those own fields, for the index.
 */
function eventRecord(event: TraceEventInput, refs: Refs): { stored: StoredEvent; line: string } {
  const { segments, blocks, sources, cache } = event;
  // Field by field rather than a rest spread, which costs more on this per-event path; the
  // type lists every other field of TraceEventInput, so a new one cannot be left out.
  const plain: { [K in keyof Required<Omit<TraceEventInput, 'segments' | 'blocks' | 'sources' | 'cache'>>]: TraceEventInput[K] } = {
    runId: event.runId,
    at: event.at,
    route: event.route,
    subject: event.subject,
    surface: event.surface,
    status: event.status,
    outcome: event.outcome,
    request: event.request,
    promptSha256: event.promptSha256,
    inputSha256: event.inputSha256,
    budget: event.budget,
    tokens: event.tokens,
    redactions: event.redactions,
    warnings: event.warnings,
    absent: event.absent,
    listings: event.listings,
    error: event.error,
    timing: event.timing,
  };
  let chars = 0;
  let references = '';
  if (blocks) references += `,"blocks":[${blocks.map(refs.block).join(',')}]`;
  if (sources) references += `,"sources":[${sources.map(refs.source).join(',')}]`;
  if (cache) references += `,"cache":${refs.json(cache)}`;
  if (segments) {
    const texts = (list: string[]) =>
      list
        .map((text) => {
          chars += text.length;
          return refs.blob(text);
        })
        .join(',');
    references += `,"segments":{"system":[${texts(segments.system)}],"input":[${texts(segments.input)}]}`;
  }
  const stored = plain as StoredEvent;
  stored.chars = chars;
  return { stored, line: eventLine(stored, references) };
}

function summarize(event: StoredEvent): EventSummary {
  const summary: EventSummary = {
    runId: event.runId,
    at: event.at,
    route: event.route,
    subject: { kind: event.subject.kind, id: event.subject.id },
    status: event.status,
    outcome: event.outcome,
    chars: event.chars ?? 0,
    promptSha256: event.promptSha256 ?? null,
  };
  if (event.surface !== undefined) summary.surface = event.surface;
  return summary;
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

interface RecordReader {
  /** A blob's text, or null when it is missing or altered. */
  blob(ref: RecordRef): Promise<string | null>;
  /** A data record's value, or undefined when it is missing or altered. */
  data(ref: RecordRef): Promise<unknown>;
}

/**
 * An event as `readRun` returns it: references resolved, prompts rebuilt and checked. A
 * block, source or cache record that cannot be read back leaves that field out of the
 * view and counts as unreadable; the prompts stand on their own digests.
 */
async function rebuild(stored: StoredEvent, read: RecordReader): Promise<{ event: TraceEventView; unreadable: number }> {
  const { segments, blocks, sources, cache, ...rest } = stored;
  let unreadable = 0;
  const all = async <T>(refs: RecordRef[]): Promise<T[] | undefined> => {
    const values: T[] = [];
    for (const ref of refs) {
      const value = await read.data(ref);
      if (value === undefined) {
        unreadable++;
        return undefined;
      }
      values.push(value as T);
    }
    return values;
  };
  const parts: Partial<Pick<TraceEventView, 'blocks' | 'sources' | 'cache'>> = {};
  if (blocks) {
    const values = await all<TraceBlock>(blocks);
    if (values) parts.blocks = values;
  }
  if (sources) {
    const values = await all<TraceSource>(sources);
    if (values) parts.sources = values;
  }
  if (cache) {
    const values = await all<object>([cache]);
    if (values) parts.cache = values[0]!;
  }
  if (!segments) return { event: { ...rest, ...parts, chars: stored.chars ?? 0, systemPrompt: null, inputPrompt: null, verified: null }, unreadable };
  const texts = new Map<string, string | null>();
  let complete = true;
  const assemble = async (refs: RecordRef[]) => {
    const views: TraceSegmentView[] = [];
    let text = '';
    for (const segmentRef of refs) {
      const sha = segmentRef[0];
      if (!texts.has(sha)) texts.set(sha, await read.blob(segmentRef));
      const piece = texts.get(sha);
      if (piece === null || piece === undefined) {
        complete = false;
        views.push({ sha256: sha, offset: text.length, chars: 0 });
        continue;
      }
      views.push({ sha256: sha, offset: text.length, chars: piece.length });
      text += piece;
    }
    return { views, text };
  };
  const system = await assemble(segments.system);
  const input = await assemble(segments.input);
  const inputPrompt = stored.inputSha256 === null && input.text === '' ? null : input.text;
  const verified =
    complete &&
    typeof stored.promptSha256 === 'string' &&
    sha256Hex(system.text) === stored.promptSha256 &&
    (stored.inputSha256 === null ? inputPrompt === null : stored.inputSha256 === undefined || (inputPrompt !== null && sha256Hex(inputPrompt) === stored.inputSha256));
  return {
    event: {
      ...rest,
      ...parts,
      chars: stored.chars,
      segments: { system: system.views, input: input.views },
      systemPrompt: complete ? system.text : null,
      inputPrompt: complete ? inputPrompt : null,
      verified,
    },
    unreadable,
  };
}
