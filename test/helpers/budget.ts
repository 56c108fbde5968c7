import { expect } from 'vitest';

/**
 * Checks that a connect's timeout names a limit within its budget, and returns that limit.
 * realtimeSession() and geminiSetup() give the service call what is left of the budget when
 * they ask, so the limit named is the budget less the time spent before asking: a machine busy
 * with other work spends more, so the exact figure is not the budget. A budget spent before
 * the call even starts says so instead ("no time left for a call"): 0.
 */
export function timeoutLimitMs(text: string, budgetMs: number): number {
  const match = /no answer within (\d+) ms|no time left for a call/.exec(text);
  expect(match, `a timeout within the ${budgetMs} ms budget: ${text}`).not.toBeNull();
  const limit = match![1] === undefined ? 0 : Number(match![1]);
  expect(limit).toBeLessThanOrEqual(budgetMs);
  return limit;
}
