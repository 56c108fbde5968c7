import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * The floor of the trace store's promise, for the benchmark's durable same-body route: an
 * append-only file of hash-chained lines (each line's link is sha256 of the previous link and
 * its own bytes), made durable with group commit — the appends that wait while a batch is
 * being written go out together in one `write` and one `fdatasync`, and each append resolves
 * once its batch is durable. Nothing else: no index, no shared segments, no retention. The
 * file is replaced by a new one past `rotateBytes`, so a long run does not fill the disk.
 */
export interface DurableLog {
  /** Appends one line of `bytes` bytes (newline included) and resolves when it is durable. */
  append(bytes: number): Promise<void>;
  close(): Promise<void>;
  readonly stats: { appends: number; batches: number };
}

const GENESIS = '0'.repeat(64);
/** `,"p":"<64 hex>","c":"<64 hex>"}` and the newline: the chain fields every line ends with. */
const SEAL = 6 + 64 + 7 + 64 + 2 + 1;

export async function createDurableLog(dir: string, rotateBytes = 64 * 1024 * 1024): Promise<DurableLog> {
  let sequence = 0;
  let path = '';
  let handle: FileHandle | null = null;
  let size = 0;
  let link = GENESIS;
  let waiting: Array<{ body: string; done: () => void; failed: (error: unknown) => void }> = [];
  let writing = false;
  const stats = { appends: 0, batches: 0 };

  async function rotate(): Promise<FileHandle> {
    const previous = handle;
    const previousPath = path;
    path = join(dir, `durable-${process.pid}-${++sequence}.log`);
    handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_APPEND, 0o600);
    size = 0;
    if (previous) {
      await previous.close();
      await unlink(previousPath).catch(() => undefined);
    }
    return handle;
  }

  async function flush(): Promise<void> {
    writing = true;
    while (waiting.length > 0) {
      const batch = waiting;
      waiting = [];
      try {
        const target = handle === null || size > rotateBytes ? await rotate() : handle;
        const lines: string[] = [];
        for (const { body } of batch) {
          const next = createHash('sha256').update(link).update(body).digest('hex');
          lines.push(`${body},"p":"${link}","c":"${next}"}\n`);
          link = next;
        }
        const bytes = Buffer.from(lines.join(''), 'utf8');
        await target.write(bytes, 0, bytes.length);
        await target.datasync();
        size += bytes.length;
        stats.batches++;
        for (const { done } of batch) done();
      } catch (error) {
        for (const { failed } of batch) failed(error);
      }
    }
    writing = false;
  }

  return {
    stats,
    append(bytes) {
      stats.appends++;
      const head = `{"n":${stats.appends},"at":${Date.now()},"x":"`;
      const body = `${head}${'x'.repeat(Math.max(0, bytes - head.length - 1 - SEAL))}"`;
      return new Promise<void>((done, failed) => {
        waiting.push({ body, done, failed });
        if (!writing) void flush();
      });
    },
    async close() {
      while (writing || waiting.length > 0) await new Promise((resolve) => setImmediate(resolve));
      await handle?.close();
      if (path) await unlink(path).catch(() => undefined);
    },
  };
}
