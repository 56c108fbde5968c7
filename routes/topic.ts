import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { createAnswerEncoder } from '../src/http/answer.js';
import { deliverJob, readClock, runIdFor, wantsHud } from '../src/http/deliver.js';
import { delivered, notModified, problems, traceUnavailable } from '../src/http/openapi.js';
import { createPersonaSources, personaOptions, TOPIC_SUBJECT_ID, withRefreshDelivery } from '../src/sources/persona.js';
import { TopicContextQuerySchema, TopicContextResponseSchema, TopicParamsSchema, TopicResultSchema } from '../schemas/context.js';
import { TOPIC_CONTEXT_OPERATION } from '../schemas/context-docs.js';

/**
 * `GET /context/topic/:topicId`: a topic block alone, delivered like a persona's prompt
 * (context.ts). Registered before `/context/:persona`; the router prefers the static segment
 * anyway.
 */
export const topicRoutes: FastifyPluginAsyncZod = async (app) => {
  const personas = createPersonaSources(personaOptions(app.config), { compiler: app.compiler, memo: app.sourceMemo });
  const topicAnswer = createAnswerEncoder(TopicContextResponseSchema, TopicResultSchema);

  app.get(
    '/context/topic/:topicId',
    {
      schema: {
        ...TOPIC_CONTEXT_OPERATION,
        params: TopicParamsSchema,
        querystring: TopicContextQuerySchema,
        response: {
          200: delivered(TopicContextResponseSchema, 'the compiled topic block'),
          ...notModified,
          ...problems(400, 401, 404, 409, 429),
          ...traceUnavailable,
        },
      },
    },
    async (request, reply) => {
      const { topicId } = request.params;
      const { query } = request;
      const provider = query.provider ?? 'openai';
      const { delivery, job } = withRefreshDelivery(provider, query.model, personas.topic({ topicId, topicName: query.topicName, sanitize: query.sanitize, provider: query.provider }));
      return deliverJob(
        request,
        reply,
        {
          route: 'GET /context/topic/:topicId',
          ...runIdFor(query.runId),
          subject: { kind: 'persona', id: TOPIC_SUBJECT_ID },
          surface: 'voice',
          identifiers: { topicId },
          options: { sanitize: query.sanitize ?? null, topicName: query.topicName !== undefined, provider, model: query.model ?? null, delivery },
          format: query.format ?? 'json',
          hud: wantsHud(query.hud),
          clock: readClock(),
          answer: topicAnswer,
          answerMembers: { delivery },
        },
        job,
      );
    },
  );
};
