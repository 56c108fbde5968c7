import type { FileHandle } from 'node:fs/promises';
import { sealText, type Predecessor } from '../chain.js';
import { eventRecord, type RecordDigests, type Refs, type TraceSplice } from '../event-record.js';
import type { QueuedEvent } from '../admission.js';
import { blobLine, dataLine, eventBody, traceFileName } from './format.js';
import { TraceFileOpener, type WriterFile } from './open-file.js';
import type { EventLocation, IndexedFile, Summarized } from './run-index.js';
import type { FilesContext } from './context.js';
import { TraceFileError } from './write-failure.js';
import { DisturbanceNotice, type Disturbance } from './disturbance.js';
import { summarize } from './run-index.js';

const noop = () => {};

/**
 * The writing half of the files backend: one file at a time, created exclusively and
 * opened `O_APPEND`, each batch one `write` and one `fdatasync`, every line chained. The
 * file at its path is compared with what this writer left before and after each batch;
 * when it changed (truncated, replaced, removed) the writer leaves it for a new file, whose
 * header records what it found. See docs/traces.md, "Durability and group commit".
 */
export class FileWriter {
  private file: WriterFile | null = null;
  private opening: string | null = null;
  private sequence = 0;
  private rotating: Promise<WriterFile> | null = null;
  /** The file this writer left last, as the next header vouches for it. */
  private previous: (Predecessor & { link: string }) | null = null;
  /** Reports a file that changed under the writer, and says so in `/readyz` for an hour. */
  private readonly notice: DisturbanceNotice;
  private readonly opener: TraceFileOpener;

  constructor(
    private readonly ctx: FilesContext,
    private readonly digests: RecordDigests,
    private readonly rotateBytes: number,
  ) {
    this.opener = new TraceFileOpener(ctx, (handle, data) => this.writeAll(handle, data));
    this.notice = new DisturbanceNotice(ctx);
  }

  /** The file being written, if any. */
  get currentName(): string | null {
    return this.file?.name ?? null;
  }

  /** A file being created right now, not yet in use. */
  get openingName(): string | null {
    return this.opening;
  }

  /** Writes a batch durably (group commit's `write`). */
  async write(batch: QueuedEvent[]): Promise<void> {
    await this.writeBatch(batch);
  }

  /** Opens a fresh file (group commit's `reopen`, after a failure). */
  async reopen(): Promise<void> {
    await this.rotate();
  }

  /** After a failure: leave the current file; the next one's header says where its acknowledged part ended. */
  abandon(): void {
    if (this.file) this.retire(this.file);
  }

  /**
   * The health probe between batches: with no file yet (a fresh start, or after retention
   * deleted an idle one), open one — header written, fdatasync, directory fsync — so a full
   * or read-only volume shows at once; otherwise check the current file is as it was left.
   */
  async probe(): Promise<void> {
    const current = this.file;
    if (!current) {
      await this.rotate();
      return;
    }
    const found = await this.disturbance(current);
    if (found && this.file === current && !this.ctx.busy()) {
      this.moveOn(current, found);
      await this.rotate();
    }
  }

  /** The note `/readyz` carries for an hour after the writer had to leave a file. */
  note(): string | undefined {
    return this.notice.note();
  }

  /**
   * For a reader that found its index of `name` stale: when it is the file being written,
   * check it is as this writer left it, and leave it if not. Returns whether `name` is
   * the writer's own current or opening file (the reader must not drop it).
   */
  async recheck(name: string): Promise<boolean> {
    const current = this.file;
    if (current?.name === name) {
      if (this.ctx.busy()) return true;
      const found = await this.disturbance(current);
      if (found && this.file === current && !this.ctx.busy()) this.moveOn(current, found);
      return true;
    }
    return name === this.opening;
  }

  /** Retention: an idle file past retention is retired, so an idle service deletes it too. */
  retireIfIdle(cutoffMs: number): void {
    if (this.file && !this.ctx.busy() && this.file.entry.newestAtMs < cutoffMs) this.retire(this.file);
  }

  async close(): Promise<void> {
    await this.rotating?.catch(noop);
    if (this.file) {
      const last = this.file;
      this.file = null;
      await last.handle.close().catch(noop);
    }
  }

  /** Appends (the file is opened O_APPEND: every write lands at its end, wherever that is now). */
  private async writeAll(handle: FileHandle, data: Buffer): Promise<void> {
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await handle.write(data, done, data.length - done, null);
      if (bytesWritten <= 0) throw new TraceFileError('EIO', 'short write');
      done += bytesWritten;
    }
  }

  /** How a file looks at its path now, when that is not how this writer left it; null when it is. */
  private async disturbance(target: WriterFile, expectedSize = target.size): Promise<Disturbance | null> {
    let info;
    try {
      info = await this.ctx.fs.stat(target.path);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTDIR') return { what: 'removed', bytes: null };
      throw error;
    }
    if (info.ino !== target.ino || info.dev !== target.dev) return { what: 'replaced', bytes: null };
    if (info.size !== expectedSize) return { what: info.size < expectedSize ? 'truncated' : 'grown', bytes: info.size };
    return null;
  }

  private retire(target: WriterFile, found?: { bytes: number | null }): void {
    if (this.file === target) this.file = null;
    target.entry.complete = true;
    // The next file's header vouches for this one as it stands now (chain.ts `Predecessor`).
    this.previous = {
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
   * copytruncate`, a deletion), reported (`DisturbanceNotice`): whatever it still holds is
   * read as any other writer's file, and the next header records what was found, so the loss
   * reads as noticed, not forged.
   */
  private moveOn(target: WriterFile, found: Disturbance): void {
    this.notice.report(target.name, target.size, found);
    this.retire(target, { bytes: found.bytes });
    this.ctx.index.dropFile(target.name);
  }

  /** Opens the next file, once at a time: a health probe and a batch that both need one share it. */
  private rotate(): Promise<WriterFile> {
    this.rotating ??= this.openNext().finally(() => {
      this.rotating = null;
    });
    return this.rotating;
  }

  /** Opens a fresh file (`open-file.ts`), leaving the current one for it. */
  private async openNext(): Promise<WriterFile> {
    const { now, writerId } = this.ctx;
    if (this.file) this.retire(this.file);
    const createdMs = now();
    const seq = ++this.sequence;
    const name = traceFileName(createdMs, writerId, seq);
    this.opening = name;
    try {
      this.file = await this.opener.open(name, createdMs, seq, this.previous);
      return this.file;
    } finally {
      this.opening = null;
    }
  }

  /**
   * Writes a batch where it can be acknowledged: the current file if it is still as this
   * writer left it, else a new one. A file that changes under the write itself is left too,
   * and the batch written again to a new file, before anyone is answered.
   */
  private async writeBatch(batch: QueuedEvent[]): Promise<void> {
    const { now, rotateMs } = this.ctx;
    for (let attempt = 0; ; attempt++) {
      let target = this.file;
      if (!target || target.size >= this.rotateBytes || now() - target.createdMs >= rotateMs) target = await this.rotate();
      else {
        const found = await this.disturbance(target);
        if (found) {
          this.moveOn(target, found);
          target = await this.rotate();
        }
      }
      const found = await this.writeTo(target, batch);
      if (!found) return;
      this.moveOn(target, found);
      if (attempt > 0) throw new TraceFileError('EREPLACED', 'trace files keep changing under the writer');
    }
  }

  /** One write and one fdatasync for the whole batch; null once durable where it was meant to be. */
  private async writeTo(target: WriterFile, batch: QueuedEvent[]): Promise<Disturbance | null> {
    const { counters, signer, index } = this.ctx;
    const digests = this.digests;
    // The batch is one string, turned into bytes once for its one write; offsets count its UTF-8 bytes.
    let text = '';
    const freshBlobs = new Map<string, string>();
    const freshData = new Map<string, string>();
    const written: EventLocation[] = [];
    const splices: Array<{ result: object; splice: TraceSplice | undefined }> = [];
    let position = target.size;
    const append = (line: string): [number, number] => {
      const at: [number, number] = [position, Buffer.byteLength(line)];
      position += at[1];
      text += line;
      return at;
    };
    const refs: Refs = {
      blob(text) {
        const sha = digests.text(text);
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
      block: (block) => refs.data(digests.block(block)),
      source: (source) => refs.data(digests.source(source)),
      json: (value) => refs.data(digests.object(value)),
    };
    let link = target.link;
    let lastOffset = target.lastOffset;
    for (const { event, result } of batch) {
      const { json, chars, splice } = eventRecord(event, refs, target.splices, result);
      if (result !== undefined) splices.push({ result, splice });
      // The link is one MAC over the line's body, which the write needs anyway.
      const body = eventBody(json);
      const next = signer.link(link, body);
      const offset = position;
      append(body);
      append(sealText(link, next));
      written.push(locate(target.entry, offset, position - offset, event, chars));
      link = next;
      lastOffset = offset;
    }
    const bytes = Buffer.from(text);
    try {
      await this.writeAll(target.handle, bytes);
      await target.handle.datasync();
      this.ctx.synced();
    } catch (error) {
      await this.cutToDurable(target);
      throw error;
    }
    const found = await this.disturbance(target, position);
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
    // Only now do the references a splice holds point at durable records.
    for (const { result, splice } of splices) target.splices.keep(result, splice);
    for (const location of written) index.add(target.entry, location);
    index.evictOverBudget();
    counters.bytes += bytes.length;
    return null;
  }

  /**
   * A batch whose write or fsync failed was answered with 503s, so none of its lines may
   * be read back as delivered later: cut the file back to its last durable size. Best
   * effort (truncating frees space, so it works on a full disk); if it fails too, the file
   * is retired anyway, and the next file's header says where the acknowledged part ended.
   */
  private async cutToDurable(target: WriterFile): Promise<void> {
    try {
      await target.handle.truncate(target.size);
      await target.handle.datasync();
      this.ctx.synced();
    } catch (error) {
      this.ctx.log.error({ err: error, file: target.name }, 'could not cut a failed batch from a trace file');
    }
  }
}

/** Where an event line is, with the fields listing needs. */
export function locate(entry: IndexedFile, offset: number, length: number, event: Summarized, chars: number): EventLocation {
  return { file: entry.name, fileCreatedMs: entry.createdMs, offset, length, atMs: Date.parse(event.at), summary: summarize(event, chars) };
}

/** `[sha256, offset, length]` as JSON: written once per record and file, reused by every event that refers to it. */
function refJson(sha: string, [offset, length]: [number, number]): string {
  return `["${sha}",${offset},${length}]`;
}
