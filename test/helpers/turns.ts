import { ProblemError } from '../../src/errors.js';

/** The minute the route tests compile for, unless a test says otherwise. */
export const TURN_NOW = '2026-11-30T17:20:00Z';

/** A `POST /compile` body: a chat turn of the example brain's scribe in #general. */
export const scribeTurn = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
  phase: 'turn',
  surface: 'chat',
  worker: 'scribe',
  channelId: 'general',
  message: 'Please tighten the sign-off of my email.',
  now: TURN_NOW,
  ...overrides,
});

/** The ProblemError `fn` throws; fails the test when it throws something else, or nothing. */
export function thrown(fn: () => unknown): ProblemError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ProblemError) return error;
    throw error;
  }
  throw new Error('expected a ProblemError');
}
