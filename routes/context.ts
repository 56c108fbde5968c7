import type { FastifyInstance } from 'fastify';
import { DEFAULT_POLICY, mergePolicy } from '../src/core/policy.js';
import { compileAndDeliver, runIdFor, type DeliveryRequest } from '../src/http/deliver.js';
import { responseJsonSchema } from '../src/http/zod.js';
import {
  compilePersona,
  compileTopic,
  personaOrNotFound,
  readPersonaSources,
  readTopicSources,
  TOPIC_SUBJECT_ID,
  topicIdForTrace,
  type PersonaCompiled,
} from '../src/sources/persona.js';
import {
  PersonaContextQuerySchema,
  PersonaContextResponseSchema,
  PersonaParamsSchema,
  TopicContextQuerySchema,
  TopicContextResponseSchema,
  TopicParamsSchema,
  type PersonaContextQuery,
  type TopicContextQuery,
} from '../schemas/context.js';

/**
 * `GET /context/:persona` (mars, venus) and `GET /context/topic/:topicId`: a voice persona's
 * compiled prompt, or a topic block alone, delivered like `POST /compile` (ETag/304,
 * `format=text`, `x-run-id`, traced before it is sent).
 */
export async function contextRoutes(app: FastifyInstance): Promise<void> {
  const options = {
    defaultTimeZone: app.config.defaultTimezone,
    policy: mergePolicy(DEFAULT_POLICY, { limitChars: app.config.promptLimitChars }),
    allowWriteTools: app.config.voiceWriteTools,
    crossLingual: app.config.voiceCrossLingual,
  };

  // Registered before /context/:persona; the router prefers the static segment anyway.
  app.get(
    '/context/topic/:topicId',
    {
      schema: {
        params: TopicParamsSchema,
        querystring: TopicContextQuerySchema,
        response: { 200: responseJsonSchema(TopicContextResponseSchema) },
      },
    },
    async (request, reply) => {
      const { topicId } = request.params as { topicId: string };
      const query = request.query as TopicContextQuery;
      const base: DeliveryRequest = {
        route: 'GET /context/topic/:topicId',
        runId: runIdFor(query.runId),
        subject: { kind: 'persona', id: TOPIC_SUBJECT_ID },
        surface: 'voice',
        identifiers: { topicId },
        options: { sanitize: query.sanitize ?? null, topicName: query.topicName !== undefined },
        warnings: [],
        format: query.format ?? 'json',
      };
      return compileAndDeliver(request, reply, base, async (brain) => {
        const sources = await readTopicSources(brain, { topicId, topicName: query.topicName, sanitize: query.sanitize }, options);
        return { warnings: sources.warnings, compile: () => compileTopic(sources) };
      });
    },
  );

  app.get(
    '/context/:persona',
    {
      schema: {
        params: PersonaParamsSchema,
        querystring: PersonaContextQuerySchema,
        response: { 200: responseJsonSchema(PersonaContextResponseSchema) },
      },
    },
    async (request, reply) => {
      // An unknown persona is a 404 listing the personas, before anything is read or traced.
      const persona = personaOrNotFound((request.params as { persona: string }).persona).key;
      const query = request.query as PersonaContextQuery;
      const now = query.now ?? new Date().toISOString();
      // An unusable topicId still connects; the trace keeps only its length and a digest prefix.
      const topic = topicIdForTrace(query.topicId);
      const traceOptions: Record<string, unknown> = {
        now: query.now ?? null,
        // The instant the clock line and "today" were computed for: `?now=` with it reproduces the prompt.
        nowUsed: now,
        timezone: query.timezone ?? null,
        sanitize: query.sanitize ?? null,
        topicName: query.topicName !== undefined,
        ...(topic.rejected === undefined ? {} : { topicIdRejected: topic.rejected }),
      };
      const base: DeliveryRequest = {
        route: `GET /context/${persona}`,
        runId: runIdFor(query.runId),
        subject: { kind: 'persona', id: persona },
        surface: 'voice',
        identifiers: { persona, topicId: topic.topicId },
        options: traceOptions,
        warnings: [],
        format: query.format ?? 'json',
      };
      return compileAndDeliver(request, reply, base, async (brain) => {
        const sources = await readPersonaSources(
          brain,
          { persona, now, timezone: query.timezone, topicId: query.topicId, topicName: query.topicName, sanitize: query.sanitize },
          options,
        );
        // The zone actually used, and where it came from, for whoever reads the trace.
        traceOptions['operatorTimezone'] = sources.timeZone.timeZone;
        traceOptions['timezoneSource'] = sources.timeZone.source;
        return { warnings: sources.warnings, compile: () => compilePersona(sources) };
      });
    },
  );
}
