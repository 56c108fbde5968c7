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
  checkSuccession,
  createChainSigner,
  GENESIS_LINK,
  sealText,
  summarizeRun,
  type ChainFinding,
  type ChainStatus,
  type Predecessor,
  type PredecessorState,
  type RunChain,
} from './trace-chain.js';
import {
  BLOB_PREFIX,
  blobLine,
  chainHeader,
  DATA_PREFIX,
  dataLine,
  EVENT_PREFIX,
  eventBody,
  FILE_PREFIX,
  FileChainScan,
  fileHeaderBody,
  makeWriterId,
  parseFileHeader,
  parseBlobLine,
  parseDataLine,
  parseTraceFileName,
  RecordMemo,
  sha256Hex,
  startsWith,
  traceFileName,
  type FileChain,
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
export type { ChainStatus, RunChain } from './trace-chain.js';

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
  /**
   * Rebuilt prompts match the recorded digests and the event's chain link holds — with a
   * signing key configured, only an event signed with that key counts; null when the event
   * carries no prompt and its link holds.
   */
  verified: boolean | null;
  /** What the event's link proves (trace-chain.ts `ChainStatus`). */
  chain: ChainStatus;
}

/** A run as `readRun` returns it: its events in order, and what the chains of their files say. */
export interface RunTraceView {
  runId: string;
  events: TraceEventView[];
  chain: RunChain;
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
  /** Files this writer found truncated, grown, replaced or removed under it, and left for a new one. */
  filesDisturbed: number;
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
  /** TRACE_SIGNING_KEY: chains are HMAC-SHA256 under this key instead of plain SHA-256 (docs/traces.md). */
  signingKey?: string | null;
}

export interface TraceStore {
  readonly dir: string;
  readonly writerId: string;
  /** Resolves once the event is durable (fsync'd); rejects with `CC_TRACE_UNAVAILABLE` otherwise. */
  append(event: TraceEventInput): Promise<void>;
  /** The run's events in order, prompts rebuilt and verified, chains checked; null for an unknown (or expired) run. */
  readRun(runId: string): Promise<RunTraceView | null>;
  /** Runs newest first, described by their latest event. */
  listRuns(query?: ListRunsQuery): Promise<RunPage>;
  /**
   * Resolves when appends can be made durable — opening the first file if there is none,
   * so a full or read-only volume shows before the first compile — and rejects with the
   * reason otherwise. Resolves with a note for a while after the writer had to leave a file
   * that changed under it.
   */
  health(): Promise<string | undefined>;
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
  /** Bytes durable and acknowledged: where the next batch starts. */
  size: number;
  createdMs: number;
  ino: number;
  dev: number;
  /** The link of its last chained record, its offset, and the events chained so far. */
  link: string;
  lastOffset: number;
  events: number;
  /** Blobs already in this file: sha256 → the JSON of a reference to it. */
  blobs: Map<string, string>;
  /** Data records already in this file: sha256 → the JSON of a reference to it. */
  data: Map<string, string>;
  entry: IndexedFile;
}

/** What a change under the writer means for the events its file held, as `/readyz` says it. */
const LOSS: Record<Disturbance['what'], string> = {
  truncated: ', and the events it held are lost',
  grown: '',
  replaced: ', and the events it held are no longer in TRACE_DIR',
  removed: ', and the events it held are no longer in TRACE_DIR',
};

/** What a writer found at its file's path instead of the file as it left it. */
interface Disturbance {
  what: 'truncated' | 'grown' | 'replaced' | 'removed';
  /** The size found; null when the file was replaced or removed. */
  bytes: number | null;
}

interface Pending {
  event: TraceEventInput;
  startedAt: number;
  resolve(): void;
  reject(error: unknown): void;
}

const HOUR = 3_600_000;
/** How long `/readyz` mentions a file the writer had to leave. */
const DISTURBANCE_NOTICE_MS = HOUR;
/** File chains checked recently, kept while the file is unchanged (same inode, size, mtime and ctime). */
const CHAIN_CACHE_FILES = 64;
/** How far apart replica clocks and a writer's last age check may be before a file counts as sealed. */
const SEAL_GRACE_MS = 60_000;
const SCAN_CHUNK = 1 << 20;
const MAX_PAGE = 100;
const DIGEST_MEMO_SIZE = 512;
/** Characters of segment text the digest memo may hold (its keys are the texts themselves). */
const DIGEST_MEMO_CHARS = 4_000_000;
export const DEFAULT_MAX_INDEXED_EVENTS = 10_000;

/** A header line is a few hundred bytes: names, times, counts. */
const HEADER_READ_BYTES = 4096;

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
    filesDisturbed: 0,
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
  let rotating: Promise<WriterFile> | null = null;
  /** The file this writer left last, as the next header vouches for it. */
  let previous: (Predecessor & { link: string }) | null = null;
  /** The last time the writer had to leave a file that changed under it, for `/readyz`. */
  let notice: { atMs: number; text: string } | null = null;
  const signer = createChainSigner(options.signingKey ?? null);
  /** Checked file chains, by name, with the stat they were checked at. */
  const chains = new Map<string, { stamp: string; chain: FileChain }>();
  const chainScans = new Map<string, Promise<FileChain>>();

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

  /** Appends (the file is opened O_APPEND: every write lands at its end, wherever that is now). */
  async function writeAll(handle: FileHandle, data: Buffer): Promise<void> {
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await handle.write(data, done, data.length - done, null);
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

  /** How a file looks at its path now, when that is not how this writer left it; null when it is. */
  async function disturbance(target: WriterFile, expectedSize = target.size): Promise<Disturbance | null> {
    let info;
    try {
      info = await fs.stat(target.path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { what: 'removed', bytes: null };
      throw error;
    }
    if (info.ino !== target.ino || info.dev !== target.dev) return { what: 'replaced', bytes: null };
    if (info.size !== expectedSize) return { what: info.size < expectedSize ? 'truncated' : 'grown', bytes: info.size };
    return null;
  }

  function retire(target: WriterFile, found?: { bytes: number | null }): void {
    if (file === target) file = null;
    target.entry.complete = true;
    // The next file's header vouches for this one as it stands now (trace-chain.ts `Predecessor`).
    previous = {
      file: target.name,
      bytes: target.size,
      last: target.lastOffset,
      events: target.events,
      newest: new Date(target.entry.newestAtMs).toISOString(),
      ...(found ? { found } : {}),
      link: target.link,
    };
    target.handle.close().catch(noop);
  }

  /**
   * Leaves a file that changed under the writer (an operator "clearing" it, `logrotate
   * copytruncate`, a deletion): whatever it still holds is read as any other writer's file,
   * and the next header records what was found, so the loss reads as noticed, not forged.
   */
  function moveOn(target: WriterFile, found: Disturbance): void {
    const at = new Date(now()).toISOString();
    const change =
      found.what === 'truncated' || found.what === 'grown'
        ? `was ${found.what} under the writer (from ${target.size} to ${found.bytes} bytes)`
        : `was ${found.what} under the writer`;
    notice = {
      atMs: now(),
      text: `the current trace file ${change} at ${at}; appends continue in a new file${LOSS[found.what]}`,
    };
    counters.filesDisturbed++;
    log.warn({ file: target.name, change: found.what, expectedBytes: target.size, foundBytes: found.bytes }, 'trace file changed under the writer; continuing in a new file');
    retire(target, { bytes: found.bytes });
    index.dropFile(target.name);
  }

  /** Opens the next file, once at a time: a health probe and a batch that both need one share it. */
  function rotate(): Promise<WriterFile> {
    rotating ??= openNext().finally(() => {
      rotating = null;
    });
    return rotating;
  }

  /** Opens a fresh file (exclusive create, append-only, 0600), durable with its directory entry before use. */
  async function openNext(): Promise<WriterFile> {
    if (file) retire(file);
    await ensureDir();
    const createdMs = now();
    const seq = ++sequence;
    const name = traceFileName(createdMs, writerId, seq);
    const path = join(dir, name);
    openingName = name;
    const entry = index.file(name, createdMs, true);
    let handle: FileHandle | null = null;
    try {
      // O_APPEND: were the file truncated under us, a write lands at its real end, and the size check after it notices.
      handle = await fs.open(path, 'ax', 0o600);
      await handle.chmod(0o600);
      const from = previous?.link ?? GENESIS_LINK;
      let prev: Predecessor | null = null;
      if (previous) {
        const { link: _link, ...claim } = previous;
        prev = claim;
      }
      const body = Buffer.from(fileHeaderBody({ writer: writerId, createdMs, seq, mac: signer.mac, key: signer.keyId, prev }));
      const link = signer.link(from, body);
      const header = Buffer.concat([body, Buffer.from(sealText(from, link))]);
      await writeAll(handle, header);
      await handle.datasync();
      counters.fsyncs++;
      await syncDir();
      const info = await handle.stat();
      entry.scannedBytes = header.length;
      counters.filesCreated++;
      counters.bytes += header.length;
      file = {
        name,
        path,
        handle,
        size: header.length,
        createdMs,
        ino: info.ino,
        dev: info.dev,
        link,
        lastOffset: 0,
        events: 0,
        blobs: new Map(),
        data: new Map(),
        entry,
      };
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

  /**
   * Writes a batch where it can be acknowledged: the current file if it is still as this
   * writer left it, else a new one. A file that changes under the write itself is left too,
   * and the batch written again to a new file, before anyone is answered.
   */
  async function writeBatch(batch: Pending[]): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      let target = file;
      if (!target || target.size >= rotateBytes || now() - target.createdMs >= rotateMs) target = await rotate();
      else {
        const found = await disturbance(target);
        if (found) {
          moveOn(target, found);
          target = await rotate();
        }
      }
      const found = await writeTo(target, batch);
      if (!found) return;
      moveOn(target, found);
      if (attempt > 0) throw Object.assign(new Error('trace files keep changing under the writer'), { code: 'EREPLACED' });
    }
  }

  /** One write and one fdatasync for the whole batch; null once durable where it was meant to be. */
  async function writeTo(target: WriterFile, batch: Pending[]): Promise<Disturbance | null> {
    const parts: Buffer[] = [];
    const freshBlobs = new Map<string, string>();
    const freshData = new Map<string, string>();
    const written: Array<{ offset: number; length: number; stored: StoredEvent }> = [];
    let position = target.size;
    const place = (bytes: Buffer): [number, number] => {
      const at: [number, number] = [position, bytes.length];
      position += bytes.length;
      parts.push(bytes);
      return at;
    };
    const append = (line: string) => place(Buffer.from(line));
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
    let link = target.link;
    let lastOffset = target.lastOffset;
    for (const { event } of batch) {
      const { stored, body } = eventRecord(event, refs);
      // The link is one MAC over bytes the write needs anyway.
      const bytes = Buffer.from(body);
      const next = signer.link(link, bytes);
      const seal = Buffer.from(sealText(link, next));
      const offset = position;
      place(bytes);
      place(seal);
      written.push({ offset, length: bytes.length + seal.length, stored });
      link = next;
      lastOffset = offset;
    }
    const bytes = Buffer.concat(parts);
    try {
      await writeAll(target.handle, bytes);
      await target.handle.datasync();
      counters.fsyncs++;
    } catch (error) {
      await discardTail(target);
      throw error;
    }
    const found = await disturbance(target, position);
    if (found) {
      // Emptied just before the write, which then landed at its start: take those lines back out.
      if (found.what === 'truncated' && found.bytes === bytes.length) {
        await target.handle.truncate(0).catch(noop);
        found.bytes = 0;
      }
      return found;
    }
    target.size = position;
    target.entry.scannedBytes = position;
    target.link = link;
    target.lastOffset = lastOffset;
    target.events += batch.length;
    for (const [sha, ref] of freshBlobs) target.blobs.set(sha, ref);
    for (const [sha, ref] of freshData) target.data.set(sha, ref);
    for (const { offset, length, stored } of written) index.add(target.entry, locate(target.entry, offset, length, stored));
    index.evictOverBudget();
    counters.batches++;
    counters.bytes += bytes.length;
    counters.largestBatch = Math.max(counters.largestBatch, batch.length);
    return null;
  }

  /**
   * A batch whose write or fsync failed was answered with 503s, so none of its lines may
   * be read back as delivered later: cut the file back to its last durable size. Best
   * effort (truncating frees space, so it works on a full disk); if it fails too, the file
   * is retired anyway, and the next file's header says where the acknowledged part ended.
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

  function currentNotice(): string | undefined {
    return notice && now() - notice.atMs < DISTURBANCE_NOTICE_MS ? notice.text : undefined;
  }

  async function health(): Promise<string | undefined> {
    if (closed) throw new Error('trace store is closed');
    if (failure) {
      if (retryDue()) await recover();
      if (failure) throw new Error(failure.reason);
      return currentNotice();
    }
    // A batch in flight checks its file itself; between batches the probe does.
    if (flushing) return currentNotice();
    const current = file;
    try {
      // No file yet (a fresh start): opening one writes and syncs its header — the write path, probed.
      if (!current) await rotate();
      else {
        const found = await disturbance(current);
        if (found && file === current && !flushing) {
          moveOn(current, found);
          await rotate();
        }
      }
    } catch (error) {
      if (!failure && !closed) fail(error);
      throw new Error(describeWriteFailure(error));
    }
    return currentNotice();
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
      if (count && !startsWith(line, BLOB_PREFIX) && !startsWith(line, DATA_PREFIX) && !startsWith(line, FILE_PREFIX)) {
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
  async function scanLines(
    name: string,
    from: number,
    size: number,
    visit: (line: Buffer, offset: number, length: number) => void,
    opened?: FileHandle,
  ): Promise<number> {
    const handle = opened ?? (await fs.open(join(dir, name), 'r'));
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
      if (!opened) await handle.close();
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

  // ---- chains --------------------------------------------------------------------------

  /** Files opened at most once for one read, whatever it needs of them; closed together. */
  function openFiles(): OpenFiles {
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
  async function fileChain(name: string, files: OpenFiles): Promise<FileChain | null> {
    const handle = await files.open(name);
    if (!handle) return null;
    const info = await handle.stat();
    // ctime moves on every write and truncate, and cannot be set back without the clock.
    const stamp = `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}:${info.ctimeMs}`;
    const known = chains.get(name);
    if (known?.stamp === stamp) return known.chain;
    // Concurrent reads of one unchanged file share one scan.
    const key = `${name}|${stamp}`;
    let scanning = chainScans.get(key);
    if (!scanning) {
      scanning = (async () => {
        const scan = new FileChainScan(name, signer);
        await scanLines(name, 0, info.size, (line, offset) => scan.line(line, offset), handle);
        const chain = scan.result();
        chains.delete(name);
        if (chains.size >= CHAIN_CACHE_FILES) chains.delete(chains.keys().next().value!);
        chains.set(name, { stamp, chain });
        return chain;
      })().finally(() => chainScans.delete(key));
      chainScans.set(key, scanning);
    }
    return scanning;
  }

  /** The bytes of a file in [from, to) when they are one whole line, newline excluded; null otherwise. */
  /** A predecessor as it is now: its size, and the whole line where its last record should be. */
  async function predecessorState(claim: Predecessor, files: OpenFiles): Promise<PredecessorState> {
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
  async function headerOf(name: string, files: OpenFiles): Promise<{ prev: Predecessor | null; p: string } | null> {
    const handle = await files.open(name);
    if (!handle) return null;
    const head = await readRange(handle, 0, HEADER_READ_BYTES);
    const end = head.indexOf(0x0a);
    const header = end === -1 ? null : chainHeader(parseFileHeader(head.subarray(0, end)));
    return header ? { prev: header.prev, p: header.p } : null;
  }

  /** The same writer's nearest later file in the directory. */
  function nextOfWriter(name: string): string | null {
    const me = parseTraceFileName(name);
    if (!me) return null;
    let next: string | null = null;
    let nextSequence = Number.POSITIVE_INFINITY;
    for (const other of index.files.keys()) {
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
  async function fileReport(name: string, files: OpenFiles): Promise<FileReport | null> {
    const chain = await fileChain(name, files);
    if (!chain) return null;
    const findings = [...chain.findings];
    let unvouched: FileReport['unvouched'] = null;
    const header = chain.header;
    const nowMs = now();
    if (header?.prev) {
      const { finding } = checkSuccession(header.prev, header.p, await predecessorState(header.prev, files), nowMs, retentionMs);
      if (finding) findings.push(finding);
    }
    const next = header ? nextOfWriter(name) : null;
    const following = next ? await headerOf(next, files) : null;
    if (following?.prev) {
      // The next file continues from this one, or from one in between that is gone.
      const state = following.prev.file === name ? await predecessorState(following.prev, files) : ({ exists: false } as const);
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
  async function reindex(names: string[]): Promise<void> {
    for (const name of names) {
      const current = file;
      if (current?.name === name) {
        if (flushing) continue;
        const found = await disturbance(current);
        if (found && file === current && !flushing) moveOn(current, found);
      } else if (name !== openingName) index.dropFile(name);
    }
    await refresh();
  }

  function readFailure(error: unknown): ProblemError {
    return new ProblemError('CC_TRACE_UNAVAILABLE', 'Traces cannot be read right now.', { cause: error });
  }

  /** The run's event locations within retention: from memory, and from evicted files that may hold it. */
  async function locateRun(runId: string): Promise<EventLocation[]> {
    const minAtMs = now() - retentionMs;
    const locations = index.locations(runId, minAtMs);
    const found: EventLocation[] = [];
    await scanEvicted(minAtMs, (location) => {
      if (location.summary.runId === runId && location.atMs >= minAtMs) found.push(location);
    }, runId);
    if (found.length > 0) {
      locations.push(...found);
      locations.sort(eventOrder);
    }
    return locations;
  }

  async function readRun(runId: string): Promise<RunTraceView | null> {
    if (!isSafeId(runId)) return null;
    let locations: EventLocation[];
    const reports = new Map<string, FileReport | null>();
    let files = openFiles();
    try {
      await refresh();
      locations = await locateRun(runId);
      for (let attempt = 0; ; attempt++) {
        for (const location of locations) if (!reports.has(location.file)) reports.set(location.file, await fileReport(location.file, files));
        const stale = [...new Set(locations.filter((location) => reports.get(location.file)?.chain.events.has(location.offset) === false).map((location) => location.file))];
        if (stale.length === 0 || attempt > 0) break;
        await files.close();
        files = openFiles();
        await reindex(stale);
        reports.clear();
        locations = await locateRun(runId);
      }
    } catch (error) {
      await files.close();
      throw readFailure(error);
    }
    if (locations.length === 0) {
      await files.close();
      return null;
    }
    try {
      const events: TraceEventView[] = [];
      const statuses: ChainStatus[] = [];
      const findings = [...reports.values()].flatMap((report) => report?.findings ?? []);
      // Records repeat from event to event of a run; each is read and checked once.
      const known = new Map<string, unknown>();
      for (const location of locations) {
        const report = reports.get(location.file);
        const status = report?.chain.events.get(location.offset);
        const handle = report && status ? await files.open(location.file) : null;
        if (!report || !status || !handle) continue;
        const stored = parseEventLine(await readRange(handle, location.offset, location.length));
        if (!stored || stored.runId !== runId) continue;
        const unvouched = report.unvouched !== null && location.offset >= report.unvouched.from;
        const link = unvouched ? 'broken' : status;
        const altered = unvouched ? report.unvouched!.text : report.chain.altered.get(location.offset);
        if (altered) findings.push({ broken: true, text: altered });
        const record = async ([sha, offset, length]: RecordRef, parse: (line: string, sha: string) => unknown) => {
          const key = `${location.file}:${offset}`;
          if (!known.has(key)) known.set(key, parse((await readRange(handle, offset, length)).toString('utf8'), sha));
          return known.get(key);
        };
        const view = await rebuild(
          stored,
          {
            blob: async (ref) => (await record(ref, parseBlobLine)) as string | null,
            data: (ref) => record(ref, parseDataLine),
          },
          { status: link, holds: signer.keyId !== null ? link === 'signed' : link !== 'broken' },
        );
        counters.unreadableLines += view.unreadable;
        events.push(view.event);
        statuses.push(link);
      }
      if (events.length === 0) return null;
      return { runId, events, chain: summarizeRun(statuses, findings) };
    } catch (error) {
      throw error instanceof ProblemError ? error : readFailure(error);
    } finally {
      await files.close();
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
      await rotating?.catch(noop);
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

function isGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/** The event an event line holds; null when the line is not one (a file changed under its index). */
function parseEventLine(line: Buffer): StoredEvent | null {
  try {
    const event = (JSON.parse(line.toString('utf8')) as { event?: unknown }).event;
    return isStoredEvent(event) ? event : null;
  } catch {
    return null;
  }
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
 * The event as written (its line without the chain seal). Segment texts, block summaries (only their summary fields: a
 * compiled block passed whole would store its content a second time), source records and
 * the cache plan become references to records stored once per file; the references are
 * spliced in as ready JSON, so only the event's own small fields are serialised per call.
 * `stored` holds those own fields, for the index.
 */
function eventRecord(event: TraceEventInput, refs: Refs): { stored: StoredEvent; body: string } {
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
  return { stored, body: eventBody(stored, references) };
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
 * view and counts as unreadable; the prompts stand on their own digests. `link` is what
 * the event's chain link proves, and whether that is enough to vouch for it.
 */
async function rebuild(
  stored: StoredEvent,
  read: RecordReader,
  link: { status: ChainStatus; holds: boolean },
): Promise<{ event: TraceEventView; unreadable: number }> {
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
  if (!segments) {
    return {
      event: { ...rest, ...parts, chars: stored.chars ?? 0, systemPrompt: null, inputPrompt: null, verified: link.holds ? null : false, chain: link.status },
      unreadable,
    };
  }
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
    link.holds &&
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
      chain: link.status,
    },
    unreadable,
  };
}
