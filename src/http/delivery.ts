/**
 * What a delivery is: what a compile route knows before reading anything
 * (`DeliveryRequest`), merged with what its job read and its outcome (`Delivery`). Built by
 * `deliverJob` (`src/http/deliver.ts`), traced (`src/http/trace-event.ts`) and answered.
 */
import type { SnapshotFile } from '../core/hud.js';
import type { Subject } from '../core/types.js';
import type { ListingRecord, SessionRecord, SourceRecord } from '../io/brain.js';
import type { JobResult } from '../sources/job.js';
import type { AnswerView } from '../../schemas/context.js';
export type { AnswerView };
import type { AnswerEncoder } from './answer.js';

export type DeliveryFormat = 'json' | 'text';

/** The request's one reading of the wall clock, and the monotonic time it was taken at: later instants derive from both. */
export interface RequestClock {
  /** Epoch ms when the request began to be handled. */
  readonly startedAt: number;
  /** `performance.now()` at the same moment. */
  readonly began: number;
}

/** What a compile route knows before reading anything. */
export interface DeliveryRequest {
  /** Route pattern, e.g. `POST /compile` or `GET /context/mars`. */
  route: string;
  runId: string;
  /** The service made `runId` up for this request: its run holds nothing yet, so the store checks no owner or count. */
  newRun: boolean;
  /** A mid-call refresh: the connect's run it compares with, which its events name. */
  parentRunId?: string;
  subject: Subject;
  surface: string;
  /** Identifiers of the request (worker, channelId, topicId, phase, ...): never text, prompts or tokens. */
  identifiers: Readonly<Record<string, string | number | boolean | null>>;
  /** Options that shaped the prompt (timezone, now, sanitize, item counts), recorded in the trace: never text or tokens. */
  options: Readonly<Record<string, unknown>>;
  format: DeliveryFormat;
  /** Whether the JSON answer carries `hud` (`?hud=1`); the trace records it either way. */
  hud?: boolean;
  clock: RequestClock;
  /** The JSON answer asked for (persona routes; default `full`); `format` is `json` with `session`. */
  view?: AnswerView;
  /** The route's JSON writer for the view (`createAnswerEncoder` over its response schema). */
  answer: AnswerEncoder;
  /** Members of the JSON answer the request decides, not the compiled result (a persona's refresh `delivery`, chosen by its model). */
  answerMembers?: Readonly<Record<string, unknown>>;
}

/** A delivery, merged from the request, what its job read, and its outcome. */
interface DeliveryBase extends DeliveryRequest {
  /** Brain files read for this compile, with their digests. */
  sources: readonly SourceRecord[];
  /** Brain paths looked for and found missing, and the directory listings relied on (trace only). */
  absent: readonly string[];
  listings: readonly ListingRecord[];
  /** The files read, as the HUD describes them. */
  loaded: readonly SnapshotFile[];
  /** The record of reads the session replayed (a persona's day), if it replayed one. */
  replayed?: SessionRecord | undefined;
  /** Warnings from reading sources (the compile adds its own). */
  warnings: readonly string[];
  timing: {
    /** Time spent reading sources, ms. */
    readMs: number;
    /** Time spent in `compile()`, ms. */
    compileMs: number;
  };
}

export interface CompiledDelivery extends DeliveryBase {
  result: JobResult;
}

export interface FailedDelivery extends DeliveryBase {
  error: unknown;
}

export type Delivery = CompiledDelivery | FailedDelivery;
