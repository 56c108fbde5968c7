import { z } from 'zod';
import { GEMINI_FUNCTION_NAME, GEMINI_TYPES, type GeminiFunctionDeclaration } from '../src/core/persona/gemini-schema.js';
import type { GeminiSetup } from '../src/core/persona/gemini-setup.js';

/**
 * Gemini Live's session setup as a persona answer carries it for `provider=gemini` (docs/providers.md,
 * issue 24): the `BidiGenerateContentSetup` without its `model`. Strict, so nothing Gemini
 * does not take can be added by mistake; test/types/sdk-shapes.test.ts holds these types
 * to `@google/genai`'s own, and the node's type to the core's `GeminiSchema`.
 */

const Int64 = z
  .string()
  .regex(/^(?:0|[1-9][0-9]*)$/)
  .meta({ description: 'an int64 as a decimal string, as the API’s JSON mapping writes it' });

/** One node of a function's parameters, in the OpenAPI 3.0 subset Gemini takes. */
export const GeminiSchemaSchema = z.strictObject({
  type: z.enum(GEMINI_TYPES).optional(),
  format: z.string().optional(),
  description: z.string().optional(),
  nullable: z.literal(true).optional(),
  enum: z.array(z.string()).optional(),
  get properties(): z.ZodOptional<z.ZodRecord<z.ZodString, typeof GeminiSchemaSchema>> {
    return z.record(z.string(), GeminiSchemaSchema).optional();
  },
  required: z.array(z.string()).optional(),
  minProperties: Int64.optional(),
  maxProperties: Int64.optional(),
  get items(): z.ZodOptional<typeof GeminiSchemaSchema> {
    return GeminiSchemaSchema.optional();
  },
  minItems: Int64.optional(),
  maxItems: Int64.optional(),
  minLength: Int64.optional(),
  maxLength: Int64.optional(),
  pattern: z.string().optional(),
  minimum: z.number().optional(),
  maximum: z.number().optional(),
  get anyOf(): z.ZodOptional<z.ZodArray<typeof GeminiSchemaSchema>> {
    return z.array(GeminiSchemaSchema).optional();
  },
  default: z.union([z.string(), z.number(), z.boolean()]).optional(),
});
// Registered apart: a recursive schema cannot chain `.meta()` in its own initializer.
GeminiSchemaSchema.register(z.globalRegistry, { id: 'GeminiSchema', description: 'a Gemini `Schema` node (OpenAPI 3.0 subset), translated from the tool’s JSON Schema' });

export const GeminiFunctionDeclarationSchema = z
  .strictObject({
    name: z.string().regex(GEMINI_FUNCTION_NAME).meta({ description: 'the name the voice server dispatches' }),
    description: z.string(),
    parameters: GeminiSchemaSchema.optional().meta({ description: 'absent for a function without parameters' }),
  })
  .meta({ id: 'GeminiFunctionDeclaration' }) satisfies z.ZodType<GeminiFunctionDeclaration>;

export const GeminiSetupSchema = z
  .strictObject({
    generationConfig: z.strictObject({
      responseModalities: z.array(z.literal('AUDIO')).length(1),
      speechConfig: z.strictObject({
        voiceConfig: z.strictObject({
          prebuiltVoiceConfig: z.strictObject({ voiceName: z.string().meta({ description: 'a Gemini prebuilt voice (GEMINI_VOICES: Orus, Aoede, …)' }) }),
        }),
      }),
    }),
    systemInstruction: z.strictObject({ parts: z.array(z.strictObject({ text: z.string() })).length(1) }).meta({ description: 'the delivered instructions' }),
    tools: z
      .array(z.strictObject({ functionDeclarations: z.array(GeminiFunctionDeclarationSchema) }))
      .max(1)
      .meta({ description: 'the persona’s tools, their parameters in Gemini’s schema; empty when none can be declared' }),
  })
  .meta({
    id: 'GeminiSetup',
    description: "Gemini Live's setup without its model: send `{setup: {model, ...setup}}` first on the WebSocket, or pass it as `config` to `ai.live.connect`",
  }) satisfies z.ZodType<GeminiSetup>;

export type GeminiSetupAnswer = z.infer<typeof GeminiSetupSchema>;
