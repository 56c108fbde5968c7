import { performance } from 'node:perf_hooks';
import { FailureState, type FailureOptions } from './failure-state.js';
import type { GroupCommitCounters, TraceObservers } from './store.js';
import { unavailable } from './store.js';

/**
 * Group commit, the same for every backend: appends queue while one batch is being made
 * durable, and everything queued when it finishes (up to `maxBatch`) becomes the next batch —
 * one write and one fsync, or one transaction. Nobody waits for a timer. When a batch fails,
 * it and everything queued behind it reject with `CC_TRACE_UNAVAILABLE`; further appends
 * reject at once, without touching storage, until a retry works again (`failure-state.ts`).
 */
export interface GroupCommitOptions<T> extends FailureOptions, Pick<TraceObservers, 'observeWrite' | 'observeBatch'> {
  maxBatch: number;
  /**
   * Makes the batch durable, or throws (nothing of it may then count as durable). May refuse
   * some items instead of writing them: it then returns, per item, the error to reject it
   * with (null for an item written); a refusal is the item's own, not a failure of the store.
   */
  write(batch: T[]): Promise<ReadonlyArray<Error | null> | void>;
}

/** Why the store cannot make appends durable now, as a health check rejects with it: a reason fit for a public readiness answer. */
export class TraceStoreError extends Error {
  override readonly name = 'TraceStoreError';
}

interface Pending<T> {
  item: T;
  startedAt: number;
  resolve(): void;
  reject(error: unknown): void;
}

export class GroupCommit<T> {
  readonly counters: GroupCommitCounters = { appends: 0, rejected: 0, refused: 0, batches: 0, largestBatch: 0, failures: 0 };
  private readonly queue: Array<Pending<T>> = [];
  private flushing: Promise<void> | null = null;
  private readonly failure: FailureState;
  private closed = false;

  constructor(private readonly options: GroupCommitOptions<T>) {
    this.failure = new FailureState(options, this.counters);
  }

  /** A batch is being made durable now. */
  get busy(): boolean {
    return this.flushing !== null;
  }

  get failing(): boolean {
    return this.failure.current !== null;
  }

  get state(): 'ok' | 'failed' | 'closed' {
    return this.closed ? 'closed' : this.failure.current ? 'failed' : 'ok';
  }

  /** Resolves once `item` is durable; rejects with `CC_TRACE_UNAVAILABLE` otherwise. */
  async append(item: T): Promise<void> {
    const startedAt = performance.now();
    const { failure } = this;
    if (failure.current && !(failure.retryDue() && (await failure.recover()))) {
      this.counters.rejected++;
      this.options.observeWrite?.((performance.now() - startedAt) / 1000, false);
      throw unavailable(failure.current?.reason ?? 'trace store closed', undefined);
    }
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ item, startedAt, resolve, reject });
      this.flushing ??= this.flushLoop();
    });
  }

  /**
   * Resolves when appends can be made durable: while failing, a retry that is due runs
   * first; otherwise, between batches, `probe` checks the write path (a batch in flight
   * checks it itself). Rejects with the reason; a failed probe puts the store in the
   * failure state, so appends fail fast until a retry works.
   */
  async health(probe: () => Promise<void>): Promise<void> {
    if (this.closed) throw new TraceStoreError('trace store is closed');
    const { failure } = this;
    if (failure.current) {
      if (failure.retryDue()) await failure.recover();
      if (failure.current) throw new TraceStoreError(failure.current.reason);
      return;
    }
    if (this.flushing) return;
    try {
      await probe();
    } catch (error) {
      if (!failure.current && !this.closed) failure.fail(error);
      throw new TraceStoreError(this.options.describe(error));
    }
  }

  /** Waits for appends in flight and queued, and stops retrying. */
  async close(): Promise<void> {
    this.closed = true;
    this.failure.stop();
    await this.flushing;
    await this.failure.recovering;
  }

  private settle(batch: Array<Pending<T>>, error: unknown, refusals?: ReadonlyArray<Error | null>): void {
    const end = performance.now();
    batch.forEach((pending, i) => {
      const refused = refusals?.[i] ?? null;
      if (refused !== null) {
        this.counters.rejected++;
        this.counters.refused++;
        pending.reject(refused);
        return;
      }
      this.options.observeWrite?.((end - pending.startedAt) / 1000, error === null);
      if (error === null) {
        this.counters.appends++;
        pending.resolve();
      } else {
        this.counters.rejected++;
        pending.reject(error);
      }
    });
  }

  private async flushLoop(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.options.maxBatch);
        const began = performance.now();
        try {
          const refusals = (await this.options.write(batch.map((pending) => pending.item))) ?? undefined;
          const written = refusals === undefined ? batch.length : refusals.filter((refusal) => refusal === null).length;
          if (written > 0) {
            this.options.observeBatch?.(written, (performance.now() - began) / 1000, true);
            this.counters.batches++;
            this.counters.largestBatch = Math.max(this.counters.largestBatch, written);
          }
          this.settle(batch, null, refusals);
        } catch (error) {
          this.options.observeBatch?.(batch.length, (performance.now() - began) / 1000, false);
          this.failure.fail(error);
          this.settle([...batch, ...this.queue.splice(0)], unavailable(this.failure.current!.reason, error));
        }
      }
    } finally {
      this.flushing = null;
    }
  }
}
