import { sha256Hex } from '../../core/digest.js';
import { hudProblems } from '../../core/hud.js';
import { envelopeProblem } from './admission.js';
import type { ChainStatus } from './chain.js';
import type { StoredEvent } from './event-record.js';
import type { TraceBlock, TraceEvent as TraceEventView, TraceRealtimeView, TraceSegmentView, TraceSource } from '../../../schemas/trace.js';

/*
 * A stored event read back (event-record.ts makes it): checked as an append checks it, its
 * references resolved against the records' sha256, and its prompts rebuilt and verified.
 */

/** Whether a parsed value has the fields every stored event has, checked as an append checks them (`envelopeProblem`). */
export function isStoredEvent<R>(value: unknown): value is StoredEvent<R> {
  return envelopeProblem(value) === null;
}

function isStoredRealtime<R>(value: StoredEvent<R>['realtime']): value is NonNullable<StoredEvent<R>['realtime']> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof value.voice === 'string' &&
    Array.isArray(value.toolNames) &&
    value.toolNames.every((name) => typeof name === 'string') &&
    value.tools !== undefined
  );
}

/** How `rebuild` resolves references: a record's sha256, and its value (checked against it). */
export interface RecordReader<R> {
  sha(ref: R): string;
  /** A blob's text, or null when it is missing or altered. */
  blob(ref: R): Promise<string | null>;
  /** A data record's value, or undefined when it is missing or altered. */
  data(ref: R): Promise<unknown>;
}

/**
 * An event as `readRun` returns it: references resolved, prompts rebuilt and checked. A
 * block, source, cache or HUD record that cannot be read back leaves that field out of the
 * view and counts as unreadable; the prompts stand on their own digests. A HUD that reads
 * back malformed (`hudProblems`: a bad digest, an inverted line range, ...) is rejected:
 * left out, its problems in `hudRejected`, and the event is not verified. `link` is what
 * the event's chain link proves, and whether that is enough to vouch for it.
 */
export async function rebuild<R>(
  stored: StoredEvent<R>,
  read: RecordReader<R>,
  link: { status: ChainStatus; holds: boolean },
): Promise<{ event: TraceEventView; unreadable: number }> {
  const { segments, blocks, sources, cache, realtime, hud, ...rest } = stored;
  let unreadable = 0;
  const all = async <T>(refs: R[]): Promise<T[] | undefined> => {
    const values: T[] = [];
    for (const ref of refs) {
      const value = await read.data(ref);
      if (value === undefined) {
        unreadable++;
        return undefined;
      }
      values.push(value as T);
    }
    return values;
  };
  const parts: Partial<Pick<TraceEventView, 'blocks' | 'sources' | 'cache' | 'realtime' | 'hud' | 'hudRejected'>> = {};
  if (blocks) {
    const values = await all<TraceBlock>(blocks);
    if (values) parts.blocks = values;
  }
  if (sources) {
    const values = await all<TraceSource>(sources);
    if (values) parts.sources = values;
  }
  if (cache) {
    const values = await all<Record<string, unknown>>([cache]);
    if (values) parts.cache = values[0]!;
  }
  if (isStoredRealtime(realtime)) {
    const tools = await read.data(realtime.tools);
    if (!Array.isArray(tools)) unreadable++;
    parts.realtime = {
      voice: realtime.voice,
      toolNames: realtime.toolNames,
      toolsSha256: read.sha(realtime.tools),
      tools: Array.isArray(tools) ? (tools as NonNullable<TraceRealtimeView['tools']>) : null,
    };
  }
  let hudHolds = true;
  if (hud) {
    const values = await all<unknown>([hud]);
    if (values) {
      const problems = hudProblems(values[0]);
      if (problems.length === 0) parts.hud = values[0] as TraceEventView['hud'];
      else {
        parts.hudRejected = problems;
        hudHolds = false;
      }
    }
  }
  const base = rest as Omit<TraceEventView, 'chars' | 'segments' | 'systemPrompt' | 'inputPrompt' | 'verified' | 'chain' | 'blocks' | 'sources' | 'cache' | 'realtime' | 'hud' | 'hudRejected'>;
  if (!segments) {
    return {
      event: { ...base, ...parts, chars: stored.chars ?? 0, systemPrompt: null, inputPrompt: null, verified: link.holds && hudHolds ? null : false, chain: link.status },
      unreadable,
    };
  }
  const texts = new Map<string, string | null>();
  let complete = true;
  const assemble = async (refs: R[]) => {
    const views: TraceSegmentView[] = [];
    let text = '';
    for (const segmentRef of refs) {
      const sha = read.sha(segmentRef);
      if (!texts.has(sha)) texts.set(sha, await read.blob(segmentRef));
      const piece = texts.get(sha);
      if (piece === null || piece === undefined) {
        complete = false;
        views.push({ sha256: sha, offset: text.length, chars: 0 });
        continue;
      }
      views.push({ sha256: sha, offset: text.length, chars: piece.length });
      text += piece;
    }
    return { views, text };
  };
  const system = await assemble(segments.system);
  const input = await assemble(segments.input);
  const inputPrompt = stored.inputSha256 === null && input.text === '' ? null : input.text;
  const verified =
    link.holds &&
    hudHolds &&
    complete &&
    typeof stored.promptSha256 === 'string' &&
    sha256Hex(system.text) === stored.promptSha256 &&
    (stored.inputSha256 === null ? inputPrompt === null : stored.inputSha256 === undefined || (inputPrompt !== null && sha256Hex(inputPrompt) === stored.inputSha256));
  return {
    event: {
      ...base,
      ...parts,
      chars: stored.chars,
      segments: { system: system.views, input: input.views },
      systemPrompt: complete ? system.text : null,
      inputPrompt: complete ? inputPrompt : null,
      verified,
      chain: link.status,
    },
    unreadable,
  };
}

/** Parses a data record's JSON text when it hashes to the sha256 expected; undefined otherwise. */
export function parseRecordJson(json: string, expectedSha: string): unknown {
  if (sha256Hex(json) !== expectedSha) return undefined;
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
}
