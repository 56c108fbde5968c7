import type { Memo } from '../../../core/memo.js';
import type { QueuedEvent, RunStanding } from '../admission.js';
import type { FileReader } from './reader.js';
import type { EventLocation } from './run-index.js';
import { eventOrder, heldStanding, mayHoldEvicted } from './run-lookup.js';
import type { FilesContext } from './context.js';

/** How long what evicted files hold of a run is trusted: their events age out of retention meanwhile. */
const EVICTED_TTL_MS = 60_000;
/** At most this often an append's lookup brings the index up to date with other writers' files. */
const REFRESH_MS = 1000;

/** What evicted files hold of one run, as read at one moment: an area of the app's cache set (`TraceStoreMemo.evictedRuns`) keeps it by run id. */
export interface EvictedOfRun {
  /** The index's eviction count when it was read: valid while no file was evicted since. */
  generation: number;
  readAtMs: number;
  events: number;
  first: EventLocation | null;
}

/**
 * How each run stands for an append on the files backend — its events within retention and
 * the caller of its first one — so that a run stays its opener's and never holds more than
 * `MAX_RUN_EVENTS`. The index holds the newest events in memory; what evicted files hold of a
 * run is read once (the run-id filters skip nearly every file) and remembered while no other
 * file is evicted, so the check inside a batch is a count over memory. Exact for this
 * process, whose batches are written one at a time; another writer's events on a shared
 * volume count once this process has scanned its file (at most a second later).
 */
export class RunStandings {
  private readonly loading = new Map<string, Promise<EvictedOfRun>>();
  private refreshedAtMs = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly ctx: FilesContext,
    private readonly reader: FileReader,
    private readonly evicted: Memo<string, EvictedOfRun>,
  ) {}

  /**
   * What must be read before an append of `runId` is queued — the index brought up to date
   * (at most once a second) and what evicted files hold of the run, when one may — or null
   * when nothing needs reading (most appends: no evicted file may hold the run).
   */
  prepare(runId: string): Promise<void> | null {
    const refresh = this.ctx.now() - this.refreshedAtMs >= REFRESH_MS;
    if (!refresh && !this.mayBeEvicted(runId)) return null;
    return (async () => {
      if (refresh) {
        this.refreshedAtMs = this.ctx.now();
        await this.reader.refresh();
      }
      if (this.mayBeEvicted(runId)) await this.load(runId);
    })();
  }

  /**
   * How every run of the batch that is not new stands now. Inside group commit's write, so
   * no batch is being written meanwhile: the events held in memory are counted synchronously,
   * after what evicted files hold of each run is known for the index as it is.
   */
  async standings(batch: readonly QueuedEvent[]): Promise<Map<string, RunStanding>> {
    const runIds = [...new Set(batch.filter((queued) => !queued.newRun).map((queued) => queued.event.runId))];
    // Held here for the batch: the memo may drop an entry at any time, a count must not.
    const ofRun = new Map(runIds.map((runId) => [runId, this.evicted.get(runId)]));
    const stale = (runId: string) => this.mayBeEvicted(runId) && !this.current(ofRun.get(runId));
    for (let attempt = 0; runIds.some(stale) && attempt < 3; attempt++) {
      // A file evicted while another run was read moves events out of memory: read again.
      for (const runId of runIds) if (stale(runId)) ofRun.set(runId, await this.load(runId));
    }
    const minAtMs = this.ctx.now() - this.ctx.retentionMs;
    const result = new Map<string, RunStanding>();
    for (const runId of runIds) {
      const memory = heldStanding(this.ctx.index, runId, minAtMs);
      const evicted = this.mayBeEvicted(runId) ? ofRun.get(runId) : undefined;
      const events = memory.events + (evicted?.events ?? 0);
      let first = memory.first;
      if (evicted?.first && (!first || eventOrder(evicted.first, first) < 0)) first = evicted.first;
      if (events > 0) result.set(runId, { owner: first?.summary.caller, events });
    }
    return result;
  }

  private mayBeEvicted(runId: string): boolean {
    return mayHoldEvicted(this.ctx.index, runId, this.ctx.now() - this.ctx.retentionMs);
  }

  private current(known: EvictedOfRun | undefined): known is EvictedOfRun {
    return known !== undefined && known.generation === this.ctx.index.generation && this.ctx.now() - known.readAtMs < EVICTED_TTL_MS;
  }

  /** What evicted files hold of the run: as remembered while current, else read (concurrent appends of one run share the read). */
  private load(runId: string): Promise<EvictedOfRun> {
    const known = this.evicted.get(runId);
    if (this.current(known)) return Promise.resolve(known);
    let loading = this.loading.get(runId);
    if (!loading) {
      loading = (async () => {
        const generation = this.ctx.index.generation;
        const readAtMs = this.ctx.now();
        const { events, first } = await this.reader.evictedStanding(runId);
        return this.evicted.set(runId, { generation, readAtMs, events, first }, 2 * runId.length + 256);
      })().finally(() => this.loading.delete(runId));
      this.loading.set(runId, loading);
    }
    return loading;
  }
}
