import type * as fsp from 'node:fs/promises';
import type { ChainSigner } from '../chain.js';
import type { TraceLog } from '../store.js';
import type { RunIndex } from './run-index.js';

export type TraceFs = Pick<typeof fsp, 'access' | 'chmod' | 'mkdir' | 'open' | 'readdir' | 'stat' | 'unlink'>;

/** What the files backend counts besides group commit (see `FileTraceStoreStats`). */
export interface FileCounters {
  /** Every fsync/fdatasync issued, including file creation and directory syncs. */
  fsyncs: number;
  /** Bytes written, headers included. */
  bytes: number;
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
  /** Lines skipped on read because they could not be parsed (a torn last line after a crash). */
  unreadableLines: number;
}

/** What the writer, the reader and retention share. */
export interface FilesContext {
  dir: string;
  fs: TraceFs;
  now: () => number;
  log: TraceLog;
  index: RunIndex;
  counters: FileCounters;
  signer: ChainSigner;
  writerId: string;
  retentionMs: number;
  rotateMs: number;
  /** A batch is being written now (group commit is busy): the writer checks its file itself. */
  busy: () => boolean;
  /** Counts one fsync or fdatasync that returned: a durable commit. */
  synced(): void;
}
