import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PERSONAS } from '../src/core/persona/personas.js';
import { sha256Hex } from '../src/core/digest.js';
import { parseInstant } from '../src/core/time.js';
import { createAnswerEncoder } from '../src/http/answer.js';
import { deliverJob, readClock, rehearse, runIdFor, wantsHud } from '../src/http/deliver.js';
import { delivered, notModified, problems, traceUnavailable } from '../src/http/openapi.js';
import { deliveryFor } from '../src/core/persona/providers.js';
import { createPersonaSources, personaOptions, personaOrNotFound, timezoneForTrace, topicIdForTrace, withRefreshDelivery } from '../src/sources/persona.js';
import {
  PersonaContextQuerySchema,
  PersonaContextResponseSchema,
  PersonaParamsSchema,
  PersonaResultSchema,
  PersonaSessionResponseSchema,
  PersonaSessionResultSchema,
} from '../schemas/context.js';
import { PERSONA_CONTEXT_OPERATION } from '../schemas/context-docs.js';

/**
 * `GET /context/:persona` (mars, venus): a voice persona's compiled prompt, delivered like
 * `POST /compile` (ETag/304, `format=text`, `x-run-id`, traced before it is sent). The topic
 * block alone is `GET /context/topic/:topicId` (topic.ts).
 */
export const contextRoutes: FastifyPluginAsyncZod = async (app) => {
  const personas = createPersonaSources(personaOptions(app.config), { compiler: app.compiler, memo: app.sourceMemo });
  // What depends on the compiled result alone is written once per shared result (a persona within one minute).
  const personaAnswer = createAnswerEncoder(PersonaContextResponseSchema, PersonaResultSchema);
  const sessionAnswer = createAnswerEncoder(PersonaSessionResponseSchema, PersonaSessionResultSchema);
  // Before /readyz answers 200: each persona's connect built once per shape of answer, as its first call would.
  app.warmUp.add({
    name: 'personas',
    run: async () => {
      let fresh = false;
      // zod compiles an object's fast path on its first parse: the route's validators are built here, not by the first call.
      PersonaContextQuerySchema.safeParse({});
      for (const { key } of PERSONAS) {
        PersonaParamsSchema.safeParse({ persona: key });
        for (const provider of ['openai', 'gemini'] as const) {
          const job = personas.persona({ persona: key, now: new Date(), provider });
          const answerMembers = { delivery: deliveryFor(provider, undefined).delivery };
          // The full answer, then the lean one a client connects with: the same result, each view's writers compiled.
          for (const [view, answer] of [['full', personaAnswer], ['session', sessionAnswer]] as const) {
            const delivery = { route: `GET /context/${key}`, subject: { kind: 'persona', id: key }, surface: 'voice', identifiers: { persona: key, topicId: null }, view, answer, answerMembers } as const;
            if (await rehearse(app, delivery, job)) fresh = true;
          }
        }
      }
      return fresh;
    },
  });

  app.get(
    '/context/:persona',
    {
      schema: {
        ...PERSONA_CONTEXT_OPERATION,
        params: PersonaParamsSchema,
        querystring: PersonaContextQuerySchema,
        response: {
          200: delivered(z.union([PersonaContextResponseSchema, PersonaSessionResponseSchema]), 'the compiled persona prompt: the full answer (`PersonaCompiled`), or with `view=session` the lean one (`PersonaSession`)'),
          ...notModified,
          ...problems(400, 401, 404, 409, 429),
          ...traceUnavailable,
        },
      },
    },
    async (request, reply) => {
      // An unknown persona is a 404 listing the personas, before anything is read or traced.
      const persona = personaOrNotFound(request.params.persona).key;
      const { query } = request;
      const clock = readClock();
      // `now` passed the schema's instant rule.
      const now = query.now === undefined ? new Date(clock.startedAt) : parseInstant(query.now)!;
      // An unusable topicId or timezone still connects; the trace keeps only its length and a digest prefix.
      const topic = topicIdForTrace(query.topicId);
      const zone = timezoneForTrace(query.timezone);
      const provider = query.provider ?? 'openai';
      const view = query.view ?? 'full';
      const { delivery, job } = withRefreshDelivery(
        provider,
        query.model,
        personas.persona({
          persona,
          now,
          timezone: query.timezone,
          topicId: query.topicId,
          topicName: query.topicName,
          sanitize: query.sanitize,
          engine: query.engine,
          provider: query.provider,
        }),
      );
      return deliverJob(
        request,
        reply,
        {
          route: `GET /context/${persona}`,
          ...runIdFor(query.runId),
          subject: { kind: 'persona', id: persona },
          surface: 'voice',
          identifiers: { persona, topicId: topic.topicId },
          options: {
            now: query.now ?? null,
            // The instant the clock line and "today" were computed for: `?now=` with it reproduces the prompt.
            nowUsed: query.now ?? now.toISOString(),
            timezone: zone.timezone,
            sanitize: query.sanitize ?? null,
            topicName: query.topicName !== undefined,
            // A digest, never the text: a refresh without the name keeps this topic, one with another name is told so.
            topicNameSha256: query.topicName === undefined ? null : sha256Hex(query.topicName),
            engine: query.engine ?? null,
            provider,
            model: query.model ?? null,
            delivery,
            // Which answer was sent: the whole compile or the lean connect answer (the trace keeps the whole run either way).
            view,
            ...(topic.rejected === undefined ? {} : { topicIdRejected: topic.rejected }),
            ...(zone.rejected === undefined ? {} : { timezoneRejected: zone.rejected }),
          },
          format: query.format ?? 'json',
          hud: wantsHud(query.hud),
          clock,
          view,
          answer: view === 'session' ? sessionAnswer : personaAnswer,
          answerMembers: { delivery },
        },
        job,
      );
    },
  );
};
