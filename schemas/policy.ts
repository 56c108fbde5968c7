import { z } from 'zod';
import { RECALL_POLICIES } from '../src/core/governance.js';
import { BLOCK_KINDS, type BlockKind } from '../src/core/types.js';
import { RoleIdSchema } from './ids.js';

const limit = z.number().int().min(0).max(2_000_000);

/** At most this many roles a worker admits. */
export const MAX_ROLES = 32;

/** The roles a worker admits, and the one it plays when a request names none. */
export const RolesPolicySchema = z
  .strictObject({
    admitted: z
      .array(RoleIdSchema)
      .max(MAX_ROLES)
      .refine((ids) => new Set(ids).size === ids.length, 'admitted roles must be unique'),
    default: RoleIdSchema.optional(),
  })
  .refine((roles) => roles.default === undefined || roles.admitted.includes(roles.default), {
    message: 'the default role must be one of the admitted roles',
    path: ['default'],
  });

/**
 * `workers/<worker>/policy.json`: optional overrides of the prompt budget, the recall policy
 * and the roles the worker admits. Unknown keys are an error (a typo should not silently keep
 * the default); a file that fails this schema is ignored with a warning and the defaults
 * apply (which admit no role).
 */
export const PolicyFileSchema = z.strictObject({
  limitChars: z.number().int().min(1000).max(2_000_000).optional(),
  blocks: z
    .strictObject(Object.fromEntries(BLOCK_KINDS.map((kind) => [kind, limit.optional()])) as Record<BlockKind, z.ZodOptional<typeof limit>>)
    .optional(),
  /** `always` (default): recall memory notes on every run; `clean-room`: only on runs with interaction context. */
  recall: z.enum(RECALL_POLICIES).optional(),
  roles: RolesPolicySchema.optional(),
});

export type PolicyFile = z.infer<typeof PolicyFileSchema>;
