import { z } from 'zod';
import { PERSONAS } from '../src/core/persona/personas.js';
import { FUNCTION_NAME, type ToolsFile } from '../src/core/persona/tools.js';

const ToolNameSchema = z.string().regex(FUNCTION_NAME, 'must be a function name: a letter, then letters, digits, _ or -, at most 64 characters');

const PersonaToolsSchema = z.strictObject({
  tools: z.array(ToolNameSchema).max(32),
});

/**
 * `personas/tools.json`: how the operator's voice server knows the tools (docs/brain-formats.md).
 * Per persona, the catalogue tools it advertises; per tool, the name the operator's
 * dispatcher calls it and other words for its description. Unknown keys are an error (a
 * typo must not silently keep the defaults); a file that fails this schema is ignored with
 * a warning and every persona keeps its default tools.
 */
export const ToolsFileSchema = z.strictObject({
  personas: z
    .strictObject(Object.fromEntries(PERSONAS.map((persona) => [persona.key, PersonaToolsSchema.optional()])) as Record<string, z.ZodOptional<typeof PersonaToolsSchema>>)
    .optional(),
  tools: z
    .record(
      ToolNameSchema,
      z.strictObject({
        name: ToolNameSchema.optional(),
        description: z.string().trim().min(1).max(1000).optional(),
      }),
    )
    .optional(),
}) satisfies z.ZodType<ToolsFile>;
