import { area, noMemos, type MemosOf } from '../core/area.js';
import { remembered } from '../core/memo.js';
import { NO_TIME_MEMO, type TimeMemo } from '../core/time.js';
import { resolveTimeZone, type ResolvedTimeZone } from '../core/zones.js';
import type { BrainFile, BrainReader, Reason } from '../io/brain.js';

export const HEARTBEAT_PATH = 'memory/heartbeat-state.json';

/** What reading the operator's zone remembers (areas of the app's cache set). */
export const HEARTBEAT_AREAS = {
  /** The zone a heartbeat file resolves to, by `heartbeatKey`. */
  heartbeats: area<string, ResolvedTimeZone>('sources.heartbeats', 0.0025),
};

export interface HeartbeatMemo extends MemosOf<typeof HEARTBEAT_AREAS> {
  /** The clock's formatters and minutes (the compiler's `time` areas). */
  readonly time: TimeMemo;
}

/** A heartbeat file's version and the default zone it falls back to. */
function heartbeatKey(file: BrainFile, defaultTimeZone: string): string {
  return `${file.sha256}|${defaultTimeZone}`;
}

/** The zone, and why the heartbeat file could not be read when it could not (its warning is the last of `warnings`). */
export interface HeartbeatZone extends ResolvedTimeZone {
  readonly unread?: Reason;
}

export const NO_HEARTBEAT_MEMO: HeartbeatMemo = Object.freeze({ ...noMemos(HEARTBEAT_AREAS), time: NO_TIME_MEMO });

/**
 * The operator's time zone: the request's, else `memory/heartbeat-state.json`'s
 * `currentLocation.timezone`, else the default. The file is read only when the request names
 * no zone; parsing and validation are core's `resolveTimeZone`, so a broken file is a
 * warning and never a failure (an invalid request zone is a 400 problem: callers that fail
 * open pass only a usable one, `usableZone` in `persona/request.ts`). A file is parsed
 * once per version of its bytes (and default zone); the result is shared and never mutated.
 */
export async function readHeartbeatTimezone(
  reader: BrainReader,
  options: { requested?: string | undefined; defaultTimeZone: string },
  memo: HeartbeatMemo = NO_HEARTBEAT_MEMO,
): Promise<HeartbeatZone> {
  if (options.requested !== undefined) return resolveTimeZone(options, memo.time);
  const result = await reader.read(HEARTBEAT_PATH, { maxBytes: 64 * 1024 });
  if (result.status === 'ok') {
    return remembered(
      memo.heartbeats,
      heartbeatKey(result, options.defaultTimeZone),
      () => resolveTimeZone({ defaultTimeZone: options.defaultTimeZone, heartbeatText: result.text }, memo.time),
      () => 512,
    );
  }
  const resolved = resolveTimeZone({ defaultTimeZone: options.defaultTimeZone }, memo.time);
  if (result.status === 'missing') return resolved;
  resolved.warnings.push(`${HEARTBEAT_PATH}: could not be read (${result.reason.detail}); using ${resolved.timeZone}`);
  return { ...resolved, unread: result.reason };
}
