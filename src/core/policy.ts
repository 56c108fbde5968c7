import type { BlockKind, Policy } from './types.js';

/**
 * Default per-kind content limits, in chars. The total (`limitChars`) comes from the
 * `PROMPT_LIMIT_CHARS` setting; a worker's `policy.json` may override either.
 */
export const DEFAULT_BLOCK_LIMITS: Readonly<Record<BlockKind, number>> = Object.freeze({
  identity: 8000,
  'runtime-policy': 4000,
  blueprint: 8000,
  persona: 12000,
  'hard-rules': 4000,
  tools: 8000,
  connections: 6000,
  role: 4000,
  capabilities: 12000,
  purpose: 2000,
  'runtime-scope': 2000,
  clock: 200,
  memory: 4000,
  'live-context': 3000,
  topic: 6000,
  briefing: 4000,
  // Nine items of at most 2,000 bytes each fit; the total limit still applies.
  experience: 18000,
  evidence: 24000,
  preferences: 400,
  task: 16000,
  message: 16000,
});

export const DEFAULT_POLICY: Policy = Object.freeze({
  limitChars: 48_000,
  blocks: DEFAULT_BLOCK_LIMITS as Record<BlockKind, number>,
});

export interface PolicyOverride {
  limitChars?: number;
  blocks?: Partial<Record<BlockKind, number>>;
}

/** The policy with `override` applied on top of `base`; neither is modified. */
export function mergePolicy(base: Policy, override: PolicyOverride | undefined): Policy {
  if (!override) return base;
  return {
    limitChars: override.limitChars ?? base.limitChars,
    blocks: { ...base.blocks, ...stripUndefined(override.blocks ?? {}) },
  };
}

function stripUndefined(blocks: Partial<Record<BlockKind, number>>): Partial<Record<BlockKind, number>> {
  return Object.fromEntries(Object.entries(blocks).filter(([, value]) => value !== undefined));
}
