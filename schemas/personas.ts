import { z } from 'zod';

export const PersonaSummarySchema = z.object({
  key: z.string(),
  name: z.string(),
  voice: z.string().meta({ description: "the built-in OpenAI realtime voice; the brain's personas/settings.json may choose another, which the persona answer's voice reports" }),
  description: z.string(),
});

/** `GET /personas`: the built-in personas, without their prompts. */
export const PersonasResponseSchema = z.object({ personas: z.array(PersonaSummarySchema) }).meta({ id: 'Personas' });
