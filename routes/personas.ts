import type { FastifyInstance } from 'fastify';
import { listPersonas } from '../src/core/persona/personas.js';
import { responseJsonSchema } from '../src/http/zod.js';
import { PersonasResponseSchema } from '../schemas/personas.js';

/** `GET /personas`: key, name, voice and description of each built-in persona; never a prompt. */
export async function personasRoutes(app: FastifyInstance): Promise<void> {
  const body = { personas: listPersonas() };
  app.get('/personas', { schema: { response: { 200: responseJsonSchema(PersonasResponseSchema) } } }, async () => body);
}
