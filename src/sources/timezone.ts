import { resolveTimeZone, type ResolvedTimeZone } from '../core/time.js';
import type { BrainReader } from '../io/brain.js';
import { NO_SOURCE_MEMO, remembered, type SourceMemo } from './job.js';

export const HEARTBEAT_PATH = 'memory/heartbeat-state.json';

/**
 * The operator's time zone (SPEC §4): the request's, else `memory/heartbeat-state.json`'s
 * `currentLocation.timezone`, else the default. The file is read only when the request names
 * no zone; parsing and validation are core's `resolveTimeZone`, so a broken file is a
 * warning and never a failure (an invalid request zone is a 400 problem). A file is parsed
 * once per version of its bytes (and default zone); the result is shared and never mutated.
 */
export async function readHeartbeatTimezone(
  reader: BrainReader,
  options: { requested?: string | undefined; defaultTimeZone: string },
  memo: SourceMemo = NO_SOURCE_MEMO,
): Promise<ResolvedTimeZone> {
  if (options.requested !== undefined) return resolveTimeZone(options, memo.time);
  const result = await reader.read(HEARTBEAT_PATH, { maxBytes: 64 * 1024 });
  if (result.status === 'ok') {
    return remembered(
      memo.parsed,
      `heartbeat|${result.sha256}|${options.defaultTimeZone}`,
      () => resolveTimeZone({ defaultTimeZone: options.defaultTimeZone, heartbeatText: result.text }, memo.time),
      () => 512,
    );
  }
  const resolved = resolveTimeZone({ defaultTimeZone: options.defaultTimeZone }, memo.time);
  if (result.status !== 'missing') resolved.warnings.push(`${HEARTBEAT_PATH}: could not be read (${result.reason}); using ${resolved.timeZone}`);
  return resolved;
}
