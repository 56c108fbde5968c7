import { performance } from 'node:perf_hooks';
import type { GroupCommitCounters, TraceLog } from './store.js';

/** What the failure state needs of its store: the clock, the log, and how to leave and reopen the write path. */
export interface FailureOptions {
  log: TraceLog;
  retryIntervalMs: number;
  now: () => number;
  /** Opens the write path anew after a failure (a fresh file, a fresh chain segment); throws while it cannot. */
  reopen(): Promise<void>;
  /** A failure happened: leave whatever the writer was appending to. */
  abandon(): void;
  /** A reason fit for a public readiness answer (no paths, no credentials). */
  describe(error: unknown): string;
}

/**
 * Group commit's failure state (`group-commit.ts`), the same for every backend: since when
 * and why appends cannot be made durable, and the retries that end it — `reopen`, every
 * `retryIntervalMs` from an unref'd timer, or when an append or a health check finds one due.
 */
export class FailureState {
  /** Why appends fail now, since when, and when a retry was last tried; null while they work. Read by every append. */
  current: { reason: string; since: number; lastAttemptAt: number } | null = null;
  /** The retry under way, if any. */
  recovering: Promise<boolean> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly options: FailureOptions,
    private readonly counters: GroupCommitCounters,
  ) {}

  /** A batch or a health probe failed: appends fail from now on, and retries begin. */
  fail(error: unknown): void {
    const reason = this.options.describe(error);
    const first = this.current === null;
    this.current = { reason, since: this.options.now(), lastAttemptAt: performance.now() };
    this.counters.failures++;
    this.options.abandon();
    if (!first) return;
    this.options.log.error({ err: error }, 'trace store cannot make events durable; appends fail until it recovers');
    // A batch that fails while the store closes (close waits for it) is past `stop`: no retries then.
    if (this.stopped) return;
    this.retryTimer = setInterval(() => void this.recover(), this.options.retryIntervalMs);
    this.retryTimer.unref();
  }

  retryDue(): boolean {
    return this.current !== null && performance.now() - this.current.lastAttemptAt >= this.options.retryIntervalMs;
  }

  /** Tries to reopen the write path (one try at a time); resolves whether appends work again. */
  recover(): Promise<boolean> {
    if (!this.current) return Promise.resolve(true);
    if (this.stopped) return Promise.resolve(false);
    this.recovering ??= (async () => {
      const down = this.current!;
      down.lastAttemptAt = performance.now();
      try {
        await this.options.reopen();
        this.current = null;
        this.clearTimer();
        this.options.log.info({ downMs: Math.max(0, this.options.now() - down.since) }, 'trace store recovered');
        return true;
      } catch (error) {
        down.reason = this.options.describe(error);
        return false;
      } finally {
        this.recovering = null;
      }
    })();
    return this.recovering;
  }

  /** The store is closing: no more retries. */
  stop(): void {
    this.stopped = true;
    this.clearTimer();
  }

  private clearTimer(): void {
    if (this.retryTimer) clearInterval(this.retryTimer);
    this.retryTimer = null;
  }
}
