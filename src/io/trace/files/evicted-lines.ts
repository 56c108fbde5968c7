import type { EventSummary, IndexedFile } from './run-index.js';
import type { HeadSummary, ListedEvent } from './run-lookup.js';

/**
 * What one evicted part's event lines hold for a listing — each line's place, time and head
 * (`event-head.ts`) — kept in columns, about 40 bytes a line plus its distinct strings, so
 * that a listing that read the part once lists from it again without reading the file. The
 * whole summaries of the lines a page showed are kept with it (`wholeSummary`). A value of an
 * area of the app's cache set (`TraceStoreMemo.evictedLines`), by file name: it holds for the
 * part read, the file's first `bytes` bytes, which never change once evicted.
 */
export class EvictedLines {
  private readonly whole = new Map<number, EventSummary>();

  constructor(
    readonly file: string,
    readonly createdMs: number,
    readonly bytes: number,
    /** Per line: its offset, length and time. */
    private readonly places: Float64Array,
    /** Per line, an index into `strings`: its run id; its request id and traceparent (-1: none). */
    private readonly runs: Uint32Array,
    private readonly requests: Int32Array,
    private readonly traceparents: Int32Array,
    /** Per line, an index into `shapes`: its subject, caller, status and outcome. */
    private readonly shapeOf: Uint32Array,
    private readonly strings: readonly string[],
    private readonly shapes: readonly Shape[],
    private weight: number,
  ) {}

  /** The estimated bytes it holds, with the whole summaries kept. */
  get bytesHeld(): number {
    return this.weight;
  }

  get lines(): number {
    return this.runs.length;
  }

  /** Calls `visit` with each line's event (its whole summary when kept), oldest first, stopping with the signal. */
  visit(visit: (event: ListedEvent) => void, keep?: (summary: HeadSummary) => boolean, signal?: AbortSignal): void {
    for (let line = 0; line < this.runs.length; line++) {
      if ((line & 1023) === 0) signal?.throwIfAborted();
      const offset = this.places[3 * line]!;
      const whole = this.whole.get(offset);
      const summary = whole ?? this.head(line);
      if (keep && !keep(summary)) continue;
      visit({ file: this.file, fileCreatedMs: this.createdMs, offset, length: this.places[3 * line + 1]!, atMs: this.places[3 * line + 2]!, summary });
    }
  }

  /** The whole summary of the line at `offset`, when a page read it before. */
  wholeSummary(offset: number): EventSummary | undefined {
    return this.whole.get(offset);
  }

  /** Keeps a line's whole summary (a page shows its run); what it adds to the weight. */
  keepWhole(offset: number, summary: EventSummary): number {
    if (this.whole.has(offset)) return 0;
    this.whole.set(offset, summary);
    const added = WHOLE_BYTES + 2 * summary.runId.length + 2 * (summary.requestId?.length ?? 0) + 2 * (summary.traceparent?.length ?? 0);
    this.weight += added;
    return added;
  }

  private head(line: number): HeadSummary {
    const shape = this.shapes[this.shapeOf[line]!]!;
    const summary: HeadSummary = { runId: this.strings[this.runs[line]!]!, subject: shape.subject, status: shape.status, outcome: shape.outcome };
    if (shape.caller !== undefined) summary.caller = shape.caller;
    const request = this.requests[line]!;
    if (request !== -1) summary.requestId = this.strings[request]!;
    const traceparent = this.traceparents[line]!;
    if (traceparent !== -1) summary.traceparent = this.strings[traceparent]!;
    return summary;
  }
}

interface Shape {
  subject: HeadSummary['subject'];
  caller: string | undefined;
  status: number;
  outcome: HeadSummary['outcome'];
}

/** The fixed part of an `EvictedLines`, and what each line takes in its columns. */
const BASE_BYTES = 512;
const LINE_BYTES = 40;
/** A distinct string: its header and the array slot and map entry that intern it, plus two bytes a character. */
const STRING_BYTES = 64;
const SHAPE_BYTES = 256;
/** A whole summary kept of a line a page showed, besides its strings. */
const WHOLE_BYTES = 640;

/** Collects a part's lines as a read goes through them; gives up past `maxBytes`, so a fill is bounded whatever the file holds. */
export class EvictedLinesBuilder {
  private readonly places: number[] = [];
  private readonly runs: number[] = [];
  private readonly requests: number[] = [];
  private readonly traceparents: number[] = [];
  private readonly shapeOf: number[] = [];
  private readonly strings: string[] = [];
  private readonly stringAt = new Map<string, number>();
  private readonly shapes: Shape[] = [];
  private readonly shapeAt = new Map<string, number>();
  private weight = BASE_BYTES;
  private over = false;

  constructor(
    readonly entry: IndexedFile,
    readonly bytes: number,
    private readonly maxBytes: number,
  ) {}

  /** Whether it still collects (it gave up past `maxBytes`). */
  get open(): boolean {
    return !this.over;
  }

  /** Adds a line's event; past `maxBytes` the builder gives up (`finish` answers null) and forgets what it held. */
  add(event: ListedEvent): void {
    if (this.over) return;
    const { summary } = event;
    this.places.push(event.offset, event.length, event.atMs);
    this.runs.push(this.intern(summary.runId));
    this.requests.push(summary.requestId === undefined ? -1 : this.intern(summary.requestId));
    this.traceparents.push(summary.traceparent === undefined ? -1 : this.intern(summary.traceparent));
    this.shapeOf.push(this.shape(summary));
    this.weight += LINE_BYTES;
    if (this.weight > this.maxBytes) {
      this.over = true;
      for (const list of [this.places, this.runs, this.requests, this.traceparents, this.shapeOf, this.strings, this.shapes]) list.length = 0;
      this.stringAt.clear();
      this.shapeAt.clear();
    }
  }

  finish(): EvictedLines | null {
    if (this.over) return null;
    const { entry, places, runs, requests, traceparents, shapeOf } = this;
    return new EvictedLines(entry.name, entry.createdMs, this.bytes, Float64Array.from(places), Uint32Array.from(runs), Int32Array.from(requests), Int32Array.from(traceparents), Uint32Array.from(shapeOf), this.strings, this.shapes, this.weight);
  }

  private intern(text: string): number {
    let at = this.stringAt.get(text);
    if (at === undefined) {
      at = this.strings.push(text) - 1;
      this.stringAt.set(text, at);
      this.weight += STRING_BYTES + 2 * text.length;
    }
    return at;
  }

  private shape(summary: HeadSummary): number {
    const key = `${summary.subject.kind}\u0000${summary.subject.id}\u0000${summary.caller === undefined ? '\u0001' : summary.caller}\u0000${summary.status}\u0000${summary.outcome}`;
    let at = this.shapeAt.get(key);
    if (at === undefined) {
      at = this.shapes.push({ subject: { kind: summary.subject.kind, id: summary.subject.id }, caller: summary.caller, status: summary.status, outcome: summary.outcome }) - 1;
      this.shapeAt.set(key, at);
      this.weight += SHAPE_BYTES + 2 * key.length;
    }
    return at;
  }
}
