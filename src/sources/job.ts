/**
 * The compile-job contract every compile route shares. A route turns an HTTP request into a
 * job; delivery (`src/http/deliver.ts`) runs it through a per-request brain session, so the
 * trace lists every file it read, and merges what it returns into the delivery: nothing a
 * job hands back is changed after the fact. The CLI runs the same jobs without HTTP.
 */
import type { Receipts, RecallDecision } from '../core/governance.js';
import type { KeptHud } from '../core/hud.js';
import type { PersonaTool } from '../core/persona/tools.js';
import type { CompiledContext } from '../core/types.js';
import type { BrainSession } from '../io/brain.js';
import type { TraceRefresh } from '../../schemas/refresh.js';

export interface CompileJob {
  /**
   * Reads what the compile needs. A bad brain file is a warning, never a throw; a bad
   * request (an unknown persona, a missing identity) is a thrown problem, traced as a failed
   * delivery.
   */
  read(brain: BrainSession): Promise<JobRead>;
}

export interface JobRead {
  /** Warnings from reading sources, in order; the compile adds its own. */
  readonly warnings: readonly string[];
  /** What reading found that the trace records beside the request's options (the zone used and where it came from). */
  readonly facts: Readonly<Record<string, unknown>>;
  /** Runs the compile; a thrown problem is a failed delivery. */
  compile(): JobResult;
}

export interface JobResult {
  readonly compiled: CompiledContext;
  /** Response members beyond the compile (persona routes: liveContext, topic, voice, tools, session; the topic route: topic). */
  readonly extra?: Readonly<Record<string, unknown>>;
  /**
   * Present when the result is remembered and handed out again (equal requests within a
   * minute): the result is then shared and never mutated, and this is where delivery keeps
   * what it derives from it.
   */
  readonly derived?: Derived;
  /** Persona routes: the voice and tools the caller is given beside the prompts, which its trace event records. */
  readonly realtime?: { readonly voice: string; readonly tools: readonly PersonaTool[]; /** sha256 of the tools' JSON, for the ETag: worked out once by their source. */ readonly toolsSha256: string };
  /** What the trace records of the compile beyond its blocks (a worker's recall decision and receipts; a refresh's changes). */
  readonly record?: Readonly<{ recall?: RecallDecision; receipts?: Receipts; refresh?: TraceRefresh }>;
  /**
   * A result that is its own validator (a mid-call refresh): its ETag, and whether there is
   * nothing to deliver — then the answer is a 304 whatever `If-None-Match` says.
   */
  readonly validator?: Readonly<{ etag: string; unchanged: boolean }>;
}

/** The representations of one compiled result an ETag tells apart. */
export type EtagKey = 'json' | 'json+hud' | 'text';

/**
 * What delivery derives from a shared result, owned by the result and filled lazily by the
 * first delivery that needs each part: its ETag per format, its answer's per-result JSON
 * (`src/http/answer.ts`) and its HUD. The only part of a shared result that ever changes;
 * what it describes never does. (The trace writer keeps what it derives from the result
 * itself, keyed by the result: `TraceSplices`.)
 */
export interface Derived {
  /** By representation; the `json+hud` one holds while `hud` is the HUD it covers. */
  etags: Partial<Record<EtagKey, string>>;
  answer?: ReadonlyArray<readonly Uint8Array[] | null>;
  /** Whether the result was answered once: its answer is kept from its second (most results are answered once). */
  answered?: boolean;
  hud?: KeptHud;
}

/**
 * `result` as a source shares it: with an empty `Derived` for delivery to fill. With
 * `freeze` (tests: `createCaches({ freezeShared: true })`) everything it describes is
 * frozen, deeply, so code that changes a shared result throws instead of serving changed
 * bytes to later requests; only `derived` slots stay writable (this one, and a prompt
 * piece's).
 */
export function shared<T extends JobResult>(result: T, freeze = false): T & { derived: Derived } {
  if (freeze) deepFreeze(result);
  return Object.freeze({ ...result, derived: { etags: {} } });
}

/** Freezes `value` and everything it holds, but slots named `derived`: where the owner of a shared value keeps what is derived from it. */
export function deepFreeze(value: unknown, seen = new WeakSet<object>()): void {
  if (value === null || typeof value !== 'object' || seen.has(value) || ArrayBuffer.isView(value)) return;
  seen.add(value);
  Object.freeze(value);
  for (const [key, inner] of Object.entries(value)) if (key !== 'derived') deepFreeze(inner, seen);
}
