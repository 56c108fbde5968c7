import { z } from 'zod';
import { BLOCK_KINDS, type BlockKind } from '../src/core/types.js';

const limit = z.number().int().min(0).max(2_000_000);

/**
 * `workers/<worker>/policy.json`: optional overrides of the prompt budget. Unknown keys are
 * an error (a typo should not silently keep the default); a file that fails this schema
 * is ignored with a warning and the defaults apply.
 */
export const PolicyFileSchema = z.strictObject({
  limitChars: z.number().int().min(1000).max(2_000_000).optional(),
  blocks: z
    .strictObject(Object.fromEntries(BLOCK_KINDS.map((kind) => [kind, limit.optional()])) as Record<BlockKind, z.ZodOptional<typeof limit>>)
    .optional(),
});

export type PolicyFile = z.infer<typeof PolicyFileSchema>;
