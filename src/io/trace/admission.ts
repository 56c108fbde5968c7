import { ProblemError } from '../../errors.js';
import { isCallerName, isSafeId } from '../../../schemas/ids.js';
import { MAX_RUN_EVENTS } from '../../../schemas/trace.js';
import type { TraceEventInput, TraceOutcome, TraceSubject } from '../../../schemas/trace.js';

/**
 * What the store admits, the same for both backends: an event of the shape
 * `TraceEventInputSchema` (schemas/trace.ts) defines, into a run that may take it (its owner's,
 * and not full). A stored event read back is checked the same way (`isStoredEvent`).
 */

const TRACE_OUTCOMES: readonly TraceOutcome[] = ['delivered', 'not-modified', 'failed'];

/**
 * The fields of `TraceEventInputSchema` the store checks itself, by hand: this runs on every
 * append, and the event holds the whole prompt (the deliver path builds it from validated
 * parts), so a schema parse would cost more than the write. `test/io/trace/admission.test.ts`
 * holds this check to the schema's verdict on these fields.
 */
export const CHECKED_FIELDS = ['runId', 'at', 'route', 'subject', 'caller', 'status', 'outcome', 'request', 'segments'] as const;

/** Rejects an event the store must not write (a bug in the caller, never user input). */
export function checkEvent(event: TraceEventInput): void {
  const problem = eventProblem(event);
  if (problem) throw new ProblemError('CC_INTERNAL', `trace event is malformed: ${problem}`);
}

/** What is wrong with an event to append, by `CHECKED_FIELDS`; null when nothing is. */
export function eventProblem(event: TraceEventInput): string | null {
  const problem = envelopeProblem(event);
  if (problem !== null) return problem;
  const { request, segments } = event;
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return 'request is missing';
  if (segments !== undefined) {
    const texts = (list: unknown) => Array.isArray(list) && list.every((piece) => typeof piece === 'string');
    if (typeof segments !== 'object' || segments === null || !texts(segments.system) || !texts(segments.input)) return 'segments must be arrays of strings';
  }
  return null;
}

/**
 * What is wrong with the fields every event holds the same way, appended or stored (the
 * others a stored event holds as references); null when nothing is.
 */
export function envelopeProblem(value: unknown): string | null {
  if (typeof value !== 'object' || value === null) return 'not an object';
  const event = value as Partial<Record<keyof TraceEventInput, unknown>>;
  if (typeof event.runId !== 'string' || !isSafeId(event.runId)) return 'runId is not a safe id';
  if (typeof event.at !== 'string' || !Number.isFinite(Date.parse(event.at))) return 'at is not an ISO time';
  if (typeof event.route !== 'string') return 'route is missing';
  const subject = event.subject as Partial<TraceSubject> | null | undefined;
  if (typeof subject !== 'object' || subject === null || (subject.kind !== 'persona' && subject.kind !== 'worker') || typeof subject.id !== 'string') return 'subject is invalid';
  if (event.caller !== undefined && (typeof event.caller !== 'string' || !isCallerName(event.caller))) return 'caller is not a caller name';
  if (!Number.isInteger(event.status)) return 'status is not an integer';
  if (!TRACE_OUTCOMES.includes(event.outcome as TraceOutcome)) return 'outcome is invalid';
  return null;
}

/** How a run stands for an append: its owner (the caller of its first event) and its events. */
export interface RunStanding {
  owner: string | undefined;
  events: number;
}

/** An event waiting in group commit, with what the caller said about its run. */
export interface QueuedEvent {
  event: TraceEventInput;
  newRun: boolean;
  result?: object | undefined;
}

/**
 * Which events of a batch may be written (null) and which are refused (the problem): an
 * event whose run was opened by another caller is `CC_RUN_OWNED`, one whose run holds
 * `max` events `CC_RUN_FULL`. `standing` holds every run of the batch not new (absent: no
 * event yet) and is updated as events are admitted, so a batch counts its own events.
 * A run whose first event has no caller (without tokens, or before callers were named)
 * belongs to nobody: its events are shown only to callers who read every run.
 */
export function admitEvents(batch: readonly QueuedEvent[], standing: Map<string, RunStanding>, max = MAX_RUN_EVENTS): Array<ProblemError | null> {
  return batch.map(({ event, newRun }) => {
    if (newRun) return null;
    const run = standing.get(event.runId) ?? { owner: undefined, events: 0 };
    if (run.events > 0 && run.owner !== undefined && run.owner !== event.caller) {
      return new ProblemError('CC_RUN_OWNED', `Run ${event.runId} was opened by another caller: send another runId (or none, for a new run).`);
    }
    if (run.events >= max) {
      return new ProblemError('CC_RUN_FULL', `Run ${event.runId} holds ${max.toLocaleString('en-US')} events, the most a run may hold: send another runId (or none, for a new run).`, {
        extensions: { limit: max },
      });
    }
    standing.set(event.runId, { owner: run.events === 0 ? event.caller : run.owner, events: run.events + 1 });
    return null;
  });
}
