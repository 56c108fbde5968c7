/**
 * What a source derives from one brain session's reads, kept with the session's record of
 * them (`BrainSession.record`) and replayed in a later session: a persona's day, a worker's
 * files. A replay takes the very cache entries the reads answered from, confirmed by one
 * batch of `lstat`s issued after it was asked for, so the value is reused exactly while
 * reading again would give the same; otherwise the files are read as usual.
 */
import { area, type MemosOf } from '../core/area.js';
import { remembered, type Memo } from '../core/memo.js';
import type { Policy } from '../core/types.js';
import type { BrainSession, SessionRecord } from '../io/brain.js';
import { deepFreeze } from './job.js';

/** A value derived from a session's reads, and the record of them. */
export interface Replayable<T> {
  readonly value: T;
  readonly record: SessionRecord;
}

/** How a replayable value is kept: whether a kept value still fits the request, what it weighs, whether it is frozen. */
export interface ReplayOptions<T> {
  /** Deep-freeze the value kept (tests: `ReplayMemo.freezeShared`), so a request that changes it throws. */
  readonly freeze?: boolean | undefined;
  /** A persona's day: the request's local date is the day's. */
  readonly fits: (value: T) => boolean;
  /** The value's bytes beyond the record (what it holds that no other area accounts for). */
  readonly bytes: (value: T) => number;
}

/**
 * The value kept under `key` when it still `fits` and `session` replays its reads (then
 * `replayed` is true); else `gather()`, kept with the session's record when every read it
 * made can be replayed.
 */
export async function throughReplay<T>(
  session: BrainSession,
  memo: Memo<string, Replayable<T>>,
  key: string,
  options: ReplayOptions<T>,
  gather: () => Promise<T>,
): Promise<{ value: T; replayed: boolean }> {
  const known = memo.get(key);
  if (known !== undefined && options.fits(known.value) && (await session.replay(known.record))) return { value: known.value, replayed: true };
  const value = await gather();
  if (options.freeze === true) deepFreeze(value);
  const record = session.record();
  if (record !== null) memo.set(key, { value, record }, options.bytes(value) + 2 * key.length + 256 * record.lookups.length);
  return { value, replayed: false };
}

/** What every source keeping replayable values shares: a policy serialised once per policy object (a route's is fixed), and whether shared values are frozen. */
export const REPLAY_AREAS = {
  policyKeys: area<Policy, string>('sources.policyKeys', 0.0025),
};

export interface ReplayMemo extends MemosOf<typeof REPLAY_AREAS> {
  /** Deep-freeze every value shared between requests (tests): a mutation then throws instead of changing what later requests are served. */
  readonly freezeShared?: boolean;
}

/** The policy as part of a key. */
export function policyKey(policy: Policy, memo: ReplayMemo): string {
  return remembered(memo.policyKeys, policy, () => JSON.stringify(policy), (key) => 2 * key.length + 64);
}
