import type { FilesContext } from './context.js';

/** What a writer found at its file's path instead of the file as it left it. */
export interface Disturbance {
  what: 'truncated' | 'grown' | 'replaced' | 'removed';
  /** The size found; null when the file was replaced or removed. */
  bytes: number | null;
}

/** What a change under the writer means for the events its file held, as `/readyz` says it. */
const LOSS: Record<Disturbance['what'], string> = {
  truncated: ', and the events it held are lost',
  grown: '',
  replaced: ', and the events it held are no longer in TRACE_DIR',
  removed: ', and the events it held are no longer in TRACE_DIR',
};

/** How long `/readyz` mentions a file the writer had to leave. */
const DISTURBANCE_NOTICE_MS = 3_600_000;

/**
 * How the writer reports a file that changed under it (an operator "clearing" it, `logrotate
 * copytruncate`, a deletion) and that it left for a new one: counted, logged, and said by
 * `/readyz` for an hour, with what the change means for the events the file held.
 */
export class DisturbanceNotice {
  private notice: { atMs: number; text: string } | null = null;

  constructor(private readonly ctx: Pick<FilesContext, 'now' | 'counters' | 'log'>) {}

  /** Reports that the writer left `file`, `size` bytes as it left it, because of `found`. */
  report(file: string, size: number, found: Disturbance): void {
    const { now, counters, log } = this.ctx;
    const at = new Date(now()).toISOString();
    const change =
      found.what === 'truncated' || found.what === 'grown' ? `was ${found.what} under the writer (from ${size} to ${found.bytes} bytes)` : `was ${found.what} under the writer`;
    this.notice = {
      atMs: now(),
      text: `the current trace file ${change} at ${at}; appends continue in a new file${LOSS[found.what]}`,
    };
    counters.filesDisturbed++;
    log.warn({ file, change: found.what, expectedBytes: size, foundBytes: found.bytes }, 'trace file changed under the writer; continuing in a new file');
  }

  /** The note `/readyz` carries for an hour after the writer had to leave a file. */
  note(): string | undefined {
    return this.notice && this.ctx.now() - this.notice.atMs < DISTURBANCE_NOTICE_MS ? this.notice.text : undefined;
  }
}
