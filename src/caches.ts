/**
 * The service's one cache set: every value the service remembers between requests lives in
 * a named area here, each a least-recently-used cache bounded by bytes (`src/cache-area.ts`),
 * so the total is bounded, visible (`stats()`) and can be dropped (`clear()`). `buildApp`
 * creates it and hands each area to its one user: the brain reader, the compiler (`src/core`
 * keeps no state of its own; its token counts included), the persona and worker sources,
 * and the trace store. Each area holds one kind of value under one kind of key, declared
 * with its user (`BrainCache`, `CompilerMemo`, `PersonaMemo`, `WorkerMemo`, `TraceStoreMemo`).
 * What is remembered never changes an answer, only its cost.
 */
import { createCacheArea, type CacheArea, type CacheStats } from './cache-area.js';
import type { CompilerMemo } from './core/compile.js';
import type { TimeMemo } from './core/time.js';
import type { BrainCache } from './io/brain.js';
import type { TraceStoreMemo } from './io/trace/files/store.js';
import type { SourceMemo } from './sources/memo.js';

export type { CacheArea, CacheStats } from './cache-area.js';
export { createCacheArea } from './cache-area.js';

/**
 * Default bound of the whole set, sized with the 112 MB heap `npm start` and the image allow:
 * the set full plus the rest of the live heap (≈ 40 MB: code, the tokenizer's ranks) leaves
 * room to collect in, and peak RSS under mixed distinct inputs stays under 200 MB
 * (docs/operations.md, "Memory"; it was 64 MB, and the peak climbed past 200).
 */
export const DEFAULT_CACHE_BYTES = 32 * 1024 * 1024;

/**
 * Each area's share of the bound. The brain's texts are the largest (the bench brain holds
 * under 9 MB of text outside people/ and companies/); compiled persona results are kept for
 * their latest minutes (what delivery keeps of each, in `app.delivered`, lives as long as the result).
 */
export const CACHE_SHARES = Object.freeze({
  'brain.files': 0.28,
  // Two listings of BRAIN_LISTING_MAX_ENTRIES (mars's memory/, venus's meetings/) of dated names, about 0.9 MB each.
  'brain.listings': 0.06,
  'brain.missing': 0.005,
  'compiler.blocks': 0.09,
  'compiler.tokens': 0.0075,
  'compiler.toolTokens': 0.0025,
  'compiler.prefixes': 0.03,
  'compiler.stableParts': 0.03,
  'compiler.inputParts': 0.01,
  'compiler.routeKeys': 0.00125,
  'compiler.time.clocks': 0.00125,
  'compiler.time.formatters': 0.0025,
  'compiler.time.minutes': 0.0025,
  'compiler.time.hours': 0.00125,
  'compiler.time.zones': 0.00125,
  'sources.personaMinutes': 0.18,
  'sources.connects': 0.01,
  'sources.personas': 0.02,
  'sources.toolsFiles': 0.0025,
  'sources.settingsFiles': 0.0025,
  'sources.dailyPlans': 0.005,
  'sources.newestMeetings': 0.005,
  'sources.liveContexts': 0.02,
  'sources.venusDays': 0.01,
  'sources.topics': 0.02,
  'sources.personaDays': 0.01,
  'sources.policyKeys': 0.0025,
  'sources.heartbeats': 0.0025,
  'sources.policies': 0.005,
  'sources.connections': 0.005,
  'sources.blueprints': 0.005,
  'sources.memoryNotes': 0.015,
  'sources.workerFiles': 0.01,
  'trace.texts': 0.05,
  'trace.blocks': 0.005,
  'trace.sources': 0.005,
  'trace.objects': 0.01,
  'trace.stored': 0.005,
  'trace.chains': 0.03,
  'trace.evictedRuns': 0.005,
  // The lines of evicted trace files a listing read (runs-by-request bench: 3 parts, 8,480 lines, ≈ 0.9 MB).
  'trace.evictedLines': 0.035,
});

export type CacheAreaName = keyof typeof CACHE_SHARES;

export interface Caches {
  readonly brain: BrainCache;
  readonly compiler: CompilerMemo;
  readonly sources: SourceMemo;
  readonly trace: TraceStoreMemo;
  /** Every area with its entries and estimated bytes. */
  stats(): CacheStats[];
  /** Forgets everything (answers stay correct; the next requests pay to fill it again). */
  clear(): void;
}

export interface CacheOptions {
  /** Bound of the whole set, in bytes (default `DEFAULT_CACHE_BYTES`). */
  maxBytes?: number;
  /**
   * Freeze every compiled result the sources share (tests turn it on), so code that mutates
   * one throws instead of changing what later requests are served.
   */
  freezeShared?: boolean;
}

/** Creates the cache set, its areas sized by `CACHE_SHARES` of `maxBytes`. */
export function createCaches(options: CacheOptions = {}): Caches {
  const maxBytes = options.maxBytes ?? DEFAULT_CACHE_BYTES;
  const areas: Array<CacheArea<never, never>> = [];
  const area = <K extends object | string | number, V extends object | string | number | boolean>(name: CacheAreaName): CacheArea<K, V> => {
    const created = createCacheArea<K, V>(name, maxBytes * CACHE_SHARES[name]);
    areas.push(created as unknown as CacheArea<never, never>);
    return created;
  };
  const time: TimeMemo = {
    formatters: area('compiler.time.formatters'),
    minutes: area('compiler.time.minutes'),
    hours: area('compiler.time.hours'),
    zones: area('compiler.time.zones'),
  };
  return {
    brain: { files: area('brain.files'), listings: area('brain.listings'), missing: area('brain.missing') },
    compiler: {
      blocks: area('compiler.blocks'),
      prefixes: area('compiler.prefixes'),
      stableParts: area('compiler.stableParts'),
      inputParts: area('compiler.inputParts'),
      routeKeys: area('compiler.routeKeys'),
      clocks: area('compiler.time.clocks'),
      tokens: area('compiler.tokens'),
      toolTokens: area('compiler.toolTokens'),
      time,
    },
    sources: {
      time,
      freezeShared: options.freezeShared === true,
      heartbeats: area('sources.heartbeats'),
      toolsFiles: area('sources.toolsFiles'),
      settingsFiles: area('sources.settingsFiles'),
      personas: area('sources.personas'),
      dailyPlans: area('sources.dailyPlans'),
      newestMeetings: area('sources.newestMeetings'),
      liveContexts: area('sources.liveContexts'),
      venusDays: area('sources.venusDays'),
      topics: area('sources.topics'),
      personaDays: area('sources.personaDays'),
      policyKeys: area('sources.policyKeys'),
      personaMinutes: area('sources.personaMinutes'),
      connects: area('sources.connects'),
      policies: area('sources.policies'),
      connections: area('sources.connections'),
      blueprints: area('sources.blueprints'),
      memoryNotes: area('sources.memoryNotes'),
      workerFiles: area('sources.workerFiles'),
    },
    trace: {
      texts: area('trace.texts'),
      blocks: area('trace.blocks'),
      sources: area('trace.sources'),
      objects: area('trace.objects'),
      stored: area('trace.stored'),
      chains: area('trace.chains'),
      evictedRuns: area('trace.evictedRuns'),
      evictedLines: area('trace.evictedLines'),
    },
    stats: () => areas.map((each) => each.stats()),
    clear: () => {
      for (const each of areas) each.clear();
    },
  };
}
