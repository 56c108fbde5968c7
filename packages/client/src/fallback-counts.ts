import type { FallbackEvent, FallbackReason, SessionSource } from './realtime.js';

/** Calls of one kind that did not get the service's session for the persona asked, since the client was created. */
export interface FallbackCount {
  /** The persona whose session the calls got: one the service or the client knows, never the caller's text. */
  servedAs: string;
  source: SessionSource;
  reason: FallbackReason;
  count: number;
}

/** Kinds counted apart; past it (more personas than any brain has), further ones are counted under `servedAs: "other"`. */
const MAX_KINDS = 256;

/**
 * The client's fallback counts, by the persona served, the source and the reason: what a voice
 * server exports as its own counter (`cc_client_fallbacks_total`), read when it is scraped. The
 * service cannot count calls that never reached it.
 */
export function createFallbackCounts() {
  const counts = new Map<string, FallbackCount>();
  return {
    add({ servedAs, source, reason }: Pick<FallbackEvent, 'servedAs' | 'source' | 'reason'>): void {
      const key = `${source}\n${reason}\n${servedAs}`;
      const found = counts.get(key) ?? counts.get(`${source}\n${reason}\nother`);
      if (found !== undefined) found.count++;
      else if (counts.size < MAX_KINDS) counts.set(key, { servedAs, source, reason, count: 1 });
      else counts.set(`${source}\n${reason}\nother`, { servedAs: 'other', source, reason, count: 1 });
    },
    /** A copy of every count, in the order each kind first happened. */
    list: (): FallbackCount[] => [...counts.values()].map((count) => ({ ...count })),
  };
}
