import { z } from 'zod';
import { PERSONAS } from '../src/core/persona/personas.js';
import { GEMINI_VOICES, OPENAI_VOICES, type PersonaSettingsFile } from '../src/core/persona/providers.js';

const voiceOf = (provider: string, voices: readonly [string, ...string[]]) =>
  z.enum(voices, { error: `must be one of the ${provider} voices: ${voices.join(', ')}` });

const PersonaSettingsSchema = z.strictObject({
  voice: z
    .strictObject({
      openai: voiceOf('OpenAI Realtime', OPENAI_VOICES).optional(),
      gemini: voiceOf('Gemini Live', GEMINI_VOICES).optional(),
    })
    .optional(),
});

/**
 * `personas/settings.json`: what the operator sets per persona (docs/brain-formats.md) — today
 * its voice per realtime provider, each checked against that provider's list. Unknown keys
 * are an error (a typo must not silently keep the default); a file that fails this schema is
 * ignored with a warning and every persona keeps its built-in voices.
 */
export const PersonaSettingsFileSchema = z.strictObject({
  personas: z
    .strictObject(Object.fromEntries(PERSONAS.map((persona) => [persona.key, PersonaSettingsSchema.optional()])) as Record<string, z.ZodOptional<typeof PersonaSettingsSchema>>)
    .optional(),
}) satisfies z.ZodType<PersonaSettingsFile>;
