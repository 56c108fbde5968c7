import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { listPersonas } from '../src/core/persona/personas.js';
import { json, problems } from '../src/http/openapi.js';
import { PersonasResponseSchema } from '../schemas/personas.js';

/** `GET /personas`: key, name, voice and description of each built-in persona; never a prompt. */
export const personasRoutes: FastifyPluginAsyncZod = async (app) => {
  const body = { personas: listPersonas() };
  app.get(
    '/personas',
    {
      schema: {
        operationId: 'listPersonas',
        summary: 'The built-in personas, without their prompts',
        response: { 200: json(PersonasResponseSchema, 'the personas in a fixed order'), ...problems(401, 429) },
      },
    },
    async () => body,
  );
};
