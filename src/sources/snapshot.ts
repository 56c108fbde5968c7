/**
 * What a source derives from one brain session's reads, kept with the session's record of
 * them (`BrainSession.record`) and replayed in a later session: a persona's day, a worker's
 * files. A replay takes the very cache entries the reads answered from, confirmed by one
 * batch of `lstat`s issued after it was asked for, so the value is reused exactly while
 * reading again would give the same; otherwise the files are read as usual.
 */
import type { Memo } from '../core/memo.js';
import type { BrainSession, SessionRecord } from '../io/brain.js';

/** A value derived from a session's reads, and the record of them. */
export interface Snapshot<T> {
  readonly value: T;
  readonly record: SessionRecord;
}

/**
 * The value kept under `key` when it still `fits` (a persona's day: the request's local
 * date) and `session` replays its reads; else `gather(session)`, kept with the session's
 * record when every read it made can be replayed.
 */
export async function throughSnapshot<T>(
  session: BrainSession,
  memo: Memo<string, Snapshot<T>>,
  key: string,
  fits: (value: T) => boolean,
  gather: () => Promise<T>,
): Promise<T> {
  const known = memo.get(key);
  if (known !== undefined && fits(known.value) && (await session.replay(known.record))) return known.value;
  const value = await gather();
  const record = session.record();
  if (record !== null) memo.set(key, { value, record }, 4096 + 2 * key.length + 256 * record.lookups.length);
  return value;
}
