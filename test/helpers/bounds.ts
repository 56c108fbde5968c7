/** Hang bounds for tests whose work takes long on a busy machine: each catches a hang, never decides a pass by speed. */

/**
 * How long a test that drives load waits for it to reach the count it needs before it goes on
 * anyway: a hang bound, not a speed. The test's assertions, not this bound, decide whether it
 * passes; on a machine whose cores other work holds, the count comes late, not never.
 */
export const LOAD_BOUND_MS = 90_000;

/**
 * The timeout of a test that drives load against a real server or runs a long CPU-bound loop
 * (a day of minutes, megabytes of adversarial text): a hang bound too, about four times what
 * the test takes on a 2-core machine running two CPU hogs beside the suite (`npm run test:busy`).
 */
export const HEAVY_TEST_MS = 240_000;
