/**
 * The compile-job contract every compile route shares. A route turns an HTTP request into a
 * job; delivery (`src/http/deliver.ts`) runs it through a per-request brain session, so the
 * trace lists every file it read, and merges what it returns into the delivery: nothing a
 * job hands back is changed after the fact. The CLI runs the same jobs without HTTP.
 */
import type { Receipts, RecallDecision } from '../core/governance.js';
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
  /** The options reading resolved, which the trace records beside the request's own (the zone used and where it came from). */
  readonly resolved: Readonly<Record<string, unknown>>;
  /** Runs the compile; a thrown problem is a failed delivery. */
  compile(): JobResult;
}

export interface JobResult {
  readonly compiled: CompiledContext;
  /** Response members beyond the compile (persona routes: liveContext, topic, voice, tools, session; the topic route: topic). */
  readonly extra?: Readonly<Record<string, unknown>>;
  /**
   * True when the source remembers the result and hands it out again (equal requests within
   * a minute): it is then never changed, and a consumer may keep what it derives from it,
   * keyed by it (delivery: `src/http/delivered.ts`).
   */
  readonly shared?: true;
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

/**
 * `result` as a source shares it: marked `shared`, and frozen. With `freeze` (tests:
 * `createCaches({ freezeShared: true })`) everything it holds is frozen, deeply, so code
 * that changes a shared result throws instead of serving changed bytes to later requests.
 */
export function shared<T extends JobResult>(result: T, freeze = false): T & { shared: true } {
  if (freeze) deepFreeze(result);
  return Object.freeze({ ...result, shared: true as const });
}

/** Freezes `value` and everything it holds. */
export function deepFreeze(value: unknown, seen = new WeakSet<object>()): void {
  if (value === null || typeof value !== 'object' || seen.has(value) || ArrayBuffer.isView(value)) return;
  seen.add(value);
  Object.freeze(value);
  for (const inner of Object.values(value)) deepFreeze(inner, seen);
}
