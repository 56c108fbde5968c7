import { describe, expect, it } from 'vitest';
import { CHECKED_FIELDS, envelopeProblem, eventProblem } from '../../../src/io/trace/admission.js';
import { isStoredEvent } from '../../../src/io/trace/event-rebuild.js';
import { TraceEventInputSchema, type TraceEventInput } from '../../../schemas/trace.js';
import { deliveredEvent, failedEvent } from '../../helpers/trace-events.js';

const pick = <K extends string>(keys: readonly K[]) => Object.fromEntries(keys.map((key) => [key, true])) as { [P in K]: true };
const ENVELOPE = CHECKED_FIELDS.filter((field) => field !== 'request' && field !== 'segments');
/** The schema, on the fields the store checks by hand: the one definition the check must agree with. */
const checked = TraceEventInputSchema.pick(pick(CHECKED_FIELDS));
const envelope = TraceEventInputSchema.pick(pick(ENVELOPE));

/** Values a field may be given, good and bad, by field (`absent` leaves the field out). */
const absent = Symbol('absent');
const VALUES: Record<(typeof CHECKED_FIELDS)[number], unknown[]> = {
  runId: ['run-1', 'a:b_c-D', 'x'.repeat(128), 'x'.repeat(129), '', 'a/b', 'a b', 1, null, absent],
  at: ['2026-11-30T17:05:00.000Z', '2026-11-30', 'nope', '', 5, null, absent],
  route: ['/context/:persona', '', 5, null, absent],
  subject: [{ kind: 'persona', id: 'mars' }, { kind: 'worker', id: 'w' }, { kind: 'robot', id: 'x' }, { kind: 'persona' }, { kind: 'persona', id: 5 }, 'mars', [], null, absent],
  caller: ['alice', 'token-0a1b2c3d', 'x'.repeat(64), 'x'.repeat(65), '', 'a b', 'a:b', 5, null, absent],
  status: [200, 304, 503, 1.5, '200', Number.NaN, Number.POSITIVE_INFINITY, null, absent],
  outcome: ['delivered', 'not-modified', 'failed', 'ok', '', 5, null, absent],
  request: [{}, { persona: 'mars' }, [], 'x', null, absent],
  segments: [{ system: ['a'], input: [] }, { system: [], input: ['b', 'c'] }, { system: 'a', input: [] }, { system: [1], input: [] }, { system: [] }, [], null, absent],
};

function variants(): unknown[] {
  const found: unknown[] = [];
  for (const base of [deliveredEvent('run-base'), failedEvent('run-failed'), deliveredEvent('run-caller', { caller: 'bob' })]) {
    found.push(base);
    for (const [field, values] of Object.entries(VALUES)) {
      for (const value of values) {
        const event: Record<string, unknown> = { ...base };
        if (value === absent) delete event[field];
        else event[field] = value;
        found.push(event);
      }
    }
  }
  return [...found, null, 'event', 5, []];
}

describe('the store’s hand-written event check', () => {
  it('agrees with TraceEventInputSchema on every field it checks, good value or bad', () => {
    const disagreements = variants().filter((event) => (eventProblem(event as TraceEventInput) === null) !== checked.safeParse(event).success);
    expect(disagreements).toEqual([]);
  });

  it('reads a stored event back by the same envelope the schema defines', () => {
    const disagreements = variants().filter((event) => (envelopeProblem(event) === null) !== envelope.safeParse(event).success || isStoredEvent(event) !== (envelopeProblem(event) === null));
    expect(disagreements).toEqual([]);
  });

  it('names the field it refuses', () => {
    expect(eventProblem({ ...deliveredEvent('run-1'), outcome: 'ok' } as unknown as TraceEventInput)).toBe('outcome is invalid');
    expect(eventProblem({ ...deliveredEvent('run-1'), segments: { system: [1], input: [] } } as unknown as TraceEventInput)).toBe('segments must be arrays of strings');
  });
});
