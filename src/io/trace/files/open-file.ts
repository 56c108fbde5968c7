import { constants } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { GENESIS_LINK, sealText, type Predecessor } from '../chain.js';
import { TraceSplices } from '../event-record.js';
import type { FilesContext } from './context.js';
import { fileHeaderBody } from './format.js';
import type { IndexedFile } from './run-index.js';

/** A trace file as its writer holds it while it appends to it. */
export interface WriterFile {
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
  /** What shared results' later events in this file splice in. */
  splices: TraceSplices;
  entry: IndexedFile;
}

const noop = () => {};

/**
 * Opens a writer's next file: exclusive create, append-only, 0600, its header chained to the
 * file before it, durable with its directory entry before use. Nothing is left behind when it
 * fails (a full disk retried must not leave an empty file each time).
 */
export class TraceFileOpener {
  private warnedChmod = false;

  constructor(
    private readonly ctx: FilesContext,
    /** The writer's appending write, which the header goes through too. */
    private readonly writeAll: (handle: FileHandle, data: Buffer) => Promise<void>,
  ) {}

  /** The file `name`, created now; `previous` is the file its writer left last, which the header vouches for. */
  async open(name: string, createdMs: number, seq: number, previous: (Predecessor & { link: string }) | null): Promise<WriterFile> {
    const { fs, dir, index, counters, signer, writerId } = this.ctx;
    await this.ensureDir();
    const path = join(dir, name);
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
      await this.writeAll(handle, header);
      await handle.datasync();
      this.ctx.synced();
      await this.syncDir();
      const info = await handle.stat();
      entry.scannedBytes = header.length;
      counters.filesCreated++;
      counters.bytes += header.length;
      return {
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
        splices: new TraceSplices(),
        entry,
      };
    } catch (error) {
      index.dropFile(name);
      if (handle) {
        await handle.close().catch(noop);
        // Retries while the disk is full must not leave an empty file behind each time.
        await fs.unlink(path).catch(noop);
      }
      throw error;
    }
  }

  private async ensureDir(): Promise<void> {
    const { fs, dir, log } = this.ctx;
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    try {
      await fs.chmod(dir, 0o700);
    } catch (error) {
      // A volume root owned by someone else: writable is what matters; say so once.
      if ((error as NodeJS.ErrnoException).code !== 'EPERM' || this.warnedChmod) throw error;
      this.warnedChmod = true;
      log.warn({ dir }, 'cannot chmod the trace directory to 0700; check its owner and mode');
    }
  }

  private async syncDir(): Promise<void> {
    const handle = await this.ctx.fs.open(this.ctx.dir, constants.O_RDONLY);
    try {
      await handle.sync();
      this.ctx.synced();
    } finally {
      await handle.close();
    }
  }
}
