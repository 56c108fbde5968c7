/**
 * The brain reader: the only code that reads the mounted brain, in four parts, each its own
 * module under `src/io/brain/`: confinement (`confine.ts`, the security core: nothing
 * outside the root is ever opened, no cache), revalidation (`revalidate.ts`: a cached result
 * stands while `lstat`s of what it relied on, made after it was asked for, show the same),
 * reading and its cache (`read.ts`: bounded, decoded reads and listings), and the session
 * (`session.ts`: one compile's view, recorded and replayed). A file problem is a result
 * (`missing`, `refused`, `error`, with a `Reason`), never a thrown error, so one bad file
 * degrades one source and never the request.
 */
import { lstat as lstatCallback } from 'node:fs';
import { readlink, statfs } from 'node:fs/promises';
import { createAreas, DEFAULT_CACHE_BYTES } from '../cache-area.js';
import { createConfinement, pathRefusal } from './brain/confine.js';
import { freshReads, listRelied, readRelied, verify, verifyListing, type ReaderContext } from './brain/read.js';
import { createRevalidator, lstatNow } from './brain/revalidate.js';
import { createSession } from './brain/session.js';
import { BRAIN_AREAS, DEFAULT_LISTING_MAX_ENTRIES, DEFAULT_MAX_BYTES, type Brain, type BrainCache, type BrainFs, type BrainLog, type BrainOptions } from './brain/types.js';

export * from './brain/types.js';
export { ROOT_UNREADABLE, unsafePathReason } from './brain/confine.js';
export { listingRecord } from './brain/read.js';
export { SLOW_REVALIDATION_MS } from './brain/revalidate.js';

/** Builds the brain reader for `root`. Nothing is read until the first call. */
export function createBrain(root: string, log: BrainLog, options: BrainOptions = {}): Brain {
  const fs: BrainFs = options.fs ?? { lstat: lstatCallback, lstatSync: lstatNow, statfs };
  const mode = fs.lstatSync === undefined ? 'async' : (options.revalidate ?? 'auto');
  const revalidator = createRevalidator(fs, log, mode, statfs);
  const confinement = createConfinement(root, fs.readlink ?? readlink, (base) => revalidator.rooted(base));
  const cache: BrainCache = options.cache ?? createAreas(BRAIN_AREAS, DEFAULT_CACHE_BYTES);
  const base = {
    confinement,
    revalidator,
    cache,
    log,
    now: options.now ?? Date.now,
    defaultMaxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES,
    maxListingEntries: options.maxListingEntries ?? DEFAULT_LISTING_MAX_ENTRIES,
  };
  const ctx: ReaderContext = { ...base, fresh: freshReads(base) };
  const brain: Brain = {
    root,
    read: async (path, readOptions) => (await readRelied(ctx, path, readOptions)).result,
    list: async (path) => (await listRelied(ctx, path)).result,
    verify: (source) => verify(ctx, source),
    // An unsafe path was never looked for, so it cannot have appeared.
    verifyAbsent: async (path) => ({ path, appeared: pathRefusal(path, undefined) === undefined && (await confinement.present(path)) }),
    verifyListing: (record) => verifyListing(ctx, record),
    session: () => createSession(ctx, brain),
  };
  return brain;
}
