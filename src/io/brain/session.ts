/**
 * A brain session: one compile's view of the brain. It remembers what the compile relied on,
 * for the trace (its sources, the paths it found missing, the listings), and can record its
 * reads to replay them in a later session (`record`, `replay`): a replay takes the very cache
 * entries the reads answered from, confirmed by one batch of `lstat`s issued after it was
 * asked for, so a caller that keeps what it derived from a session (a persona's day) reuses
 * it exactly while a fresh read would give the same.
 */
import type { SnapshotFile } from '../../core/hud.js';
import { listingOf, listRelied, readRelied, hudFileOf, type ReaderContext, type Relied } from './read.js';
import type { BrainSession, CachedFile, CachedListing, ListingRecord, Lookup, SessionRecord, SourceRecord } from './types.js';

/** A new session of the reader `ctx` (whose records are `owner`'s alone). */
export function createSession(ctx: ReaderContext, owner: object): BrainSession {
  const recorded = new Map<string, SourceRecord>();
  const hudFiles = new Map<string, SnapshotFile>();
  const absent = new Set<string>();
  const listed = new Map<string, ListingRecord>();
  /** What each read and listing relied on (the cache entry it answered from, a miss, a listing), in order: what a replay must confirm. */
  const relied: Array<Relied | null> = [];
  let replayed: SessionRecord | undefined;
  /**
   * The record this session made of its own reads, while no read has followed it: the
   * accessors hand out its very arrays, the ones a later session replaying it hands out too,
   * so a caller keeping what it derived by one of them (delivery's HUD by `loaded`) finds it
   * again in the later session.
   */
  let made: { record: SessionRecord; reads: number } | undefined;
  const whole = () => (made !== undefined && made.reads === relied.length ? made.record : undefined);
  return {
    async read(path, readOptions = {}) {
      const { result, relied: read } = await readRelied(ctx, path, readOptions);
      relied.push(read);
      if (result.status === 'ok' && !recorded.has(path)) {
        const record: SourceRecord = {
          path,
          size: result.size,
          mtimeMs: result.mtimeMs,
          sha256: result.sha256,
          truncated: result.truncated,
          maxBytes: readOptions.maxBytes ?? ctx.defaultMaxBytes,
          keep: readOptions.keep ?? 'head',
        };
        if (readOptions.within !== undefined) record.within = readOptions.within;
        recorded.set(path, record);
        hudFiles.set(path, hudFileOf(result, record.keep, read));
      } else if (result.status === 'missing') absent.add(path);
      return result;
    },
    async list(path) {
      const { result, relied: listing } = await listRelied(ctx, path);
      relied.push(listing);
      if (result.status === 'ok' && !listed.has(path)) listed.set(path, listingOf(result, listing));
      else if (result.status === 'missing') absent.add(path);
      return result;
    },
    // A replay's reads come first, as they were made first; reads made after it follow.
    sources: () => whole()?.sources ?? merged(replayed?.sources, recorded, (source) => source.path),
    absent: () => whole()?.absent ?? merged(replayed?.absent, absent, (path) => path),
    listings: () => whole()?.listings ?? merged(replayed?.listings, listed, (listing) => listing.path),
    loaded: () => whole()?.loaded ?? merged(replayed?.loaded, hudFiles, (file) => file.path),
    record() {
      if (replayed !== undefined) return relied.length === 0 ? replayed : null;
      const parts = recordOf(relied);
      if (parts === null) return null;
      const record = Object.freeze({
        reader: owner,
        ...parts,
        sources: Object.freeze([...recorded.values()]),
        absent: Object.freeze([...absent]),
        listings: Object.freeze([...listed.values()]),
        loaded: Object.freeze([...hudFiles.values()]),
      });
      made = { record, reads: relied.length };
      return record;
    },
    async replay(record) {
      const { files, missing, listings } = ctx.cache;
      if (record.reader !== owner) return false;
      for (const { key, entry } of record.files) if (files.get(key) !== entry) return false;
      for (const { path, lookups } of record.missing) if (missing.get(path) !== lookups) return false;
      for (const { path, entry } of record.directories) if (listings.get(path) !== entry) return false;
      if (!(await ctx.revalidator.stillHolds(record.lookups))) return false;
      replayed = record;
      return true;
    },
    replayed: () => replayed,
  };
}

/** The cache entries, misses and listings a session's reads relied on, and all their lookups; null when one read cannot be replayed. */
function recordOf(relied: ReadonlyArray<Relied | null>): Pick<SessionRecord, 'files' | 'missing' | 'directories' | 'lookups'> | null {
  const files: Array<{ key: string; entry: CachedFile }> = [];
  const missing: Array<{ path: string; lookups: Lookup[] }> = [];
  const directories: Array<{ path: string; entry: CachedListing }> = [];
  const lookups: Lookup[] = [];
  for (const each of relied) {
    if (each === null) return null;
    if (each.kind === 'file') {
      files.push({ key: each.key, entry: each.entry });
      lookups.push(...each.entry.lookups);
    } else if (each.kind === 'missing') {
      missing.push({ path: each.path, lookups: each.lookups });
      lookups.push(...each.lookups);
    } else if (each.kind === 'listing') {
      directories.push({ path: each.path, entry: each.entry });
      lookups.push(...each.entry.lookups);
    }
  }
  return { files, missing, directories, lookups };
}

/** `first` (a replayed record's own array, handed out as it is when nothing was read after it), then the items of `then` it lacks. */
function merged<T>(first: readonly T[] | undefined, then: ReadonlyMap<string, T> | ReadonlySet<T>, key: (item: T) => string): readonly T[] {
  const items = [...then.values()] as T[];
  if (first === undefined) return items;
  if (items.length === 0) return first;
  const seen = new Set(first.map(key));
  const all = [...first];
  for (const item of items) if (!seen.has(key(item))) all.push(item);
  return all;
}
