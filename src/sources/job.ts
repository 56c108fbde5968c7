/**
 * The compile-job contract every compile route shares. A route turns an HTTP request into a
 * job; delivery (`src/http/deliver.ts`) runs it through a per-request brain session, so the
 * trace lists every file it read, and merges what it returns into the delivery: nothing a
 * job hands back is changed after the fact. The CLI runs the same jobs without HTTP.
 */
import type { Compiler } from '../core/compile.js';
import type { Receipts, RecallDecision } from '../core/governance.js';
import { noMemo, type Memo } from '../core/memo.js';
import { NO_TIME_MEMO, type TimeMemo } from '../core/time.js';
import type { PersonaTool } from '../core/persona/tools.js';
import type { CompiledContext } from '../core/types.js';
import type { BrainReader } from '../io/brain.js';

export interface CompileJob {
  /**
   * Reads what the compile needs. A bad brain file is a warning, never a throw; a bad
   * request (an unknown persona, a missing identity) is a thrown problem, traced as a failed
   * delivery.
   */
  read(brain: BrainReader): Promise<JobRead>;
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
  /** True when the result is remembered and handed out again (equal requests within a minute): shared, never mutated. */
  readonly shared?: boolean;
  /**
   * The same object for every minute of one persona, files and options while they are kept: a
   * shared result's answer is derived from the one written for the minute before it (by this
   * key, in the cache set's weak `answers` area).
   */
  readonly lineage?: object;
  /** Persona routes: the voice and tools the caller is given beside the prompts, which its trace event records. */
  readonly realtime?: { readonly voice: string; readonly tools: readonly PersonaTool[] };
  /** What the trace records of the compile beyond its blocks (a worker's recall decision and receipts). */
  readonly record?: Readonly<{ recall?: RecallDecision; receipts?: Receipts }>;
}

/**
 * What the sources remember between requests: values derived from brain files (keyed by
 * their digests, or by the brain's own unchanged listing objects) and compile results
 * handed out again. Areas of the app's cache set; `NO_SOURCE_MEMO` remembers nothing.
 */
export interface SourceMemo {
  readonly parsed: Memo<string | object, object>;
  readonly compiled: Memo<string, object>;
  readonly time: TimeMemo;
}

export const NO_SOURCE_MEMO: SourceMemo = Object.freeze({
  parsed: noMemo<string | object, object>(),
  compiled: noMemo<string, object>(),
  time: NO_TIME_MEMO,
});

/** What a sources factory needs besides its options: the compiler and the memo, both from the app's cache set. */
export interface SourceDeps {
  compiler: Compiler;
  memo?: SourceMemo;
}

/** The value remembered under `key`, else `derive()` remembered with its weight. Keys name everything the value depends on. */
export function remembered<T extends object>(memo: Memo<string | object, object>, key: string | object, derive: () => T, bytes: (value: T) => number): T {
  const known = memo.get(key) as T | undefined;
  if (known !== undefined) return known;
  const value = derive();
  return memo.set(key, value, bytes(value)) as T;
}
