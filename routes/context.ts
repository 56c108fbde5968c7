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
        operationId: 'getPersonaContext',
        summary: "A voice persona's compiled prompt (GET /context/mars, GET /context/venus)",
        description: `The persona's trusted blocks (identity first, then the runtime policy, the character —
or the operator's \`personas/<persona>.md\` — hard rules and tools: worker-stable), the
voice runtime scope (surface-stable) and the date-and-time line in the operator's zone
(volatile, last of the system prompt); then, as advisory input, the live context
(mars: feelings from the two newest daily notes, SOUL.md core, recurring themes; venus:
tasks by priority, today's events, unread count, newest meeting) and the topic when
\`topicId\` is given. Two calls that differ only in time share every stable boundary hash
and the \`routeKey\`.

Every brain source degrades to a warning (missing, unsafe, binary or invalid UTF-8,
over its cap, broken heartbeat JSON, no brain root at all): the persona still gets
its prompt. Brain-derived text is PII-scrubbed; \`redactions\` counts the live context's
redactions too.

The answer is a drop-in for a realtime voice server (docs/voice-server.md): \`session\` is the
object to send to the realtime calls endpoint or \`session.update\` unchanged
(\`{type: "realtime", instructions, audio: {output: {voice}}, tools}\`; the model is the
caller's). Its \`instructions\` are the delivered instructions (\`systemPrompt\`, a blank
line, \`inputPrompt\`: the full answer carries each text once, so it has no top-level
\`instructions\`; \`format=text\` answers them as delivered) made realtime-safe ASCII whatever \`sanitize\` says (\`sanitize=ascii\` makes every prompt ASCII too; the
trace records \`sessionInstructions: "ascii"\`), and its \`voice\` is the persona's
OpenAI voice from the brain's \`personas/settings.json\` (default: mars \`ash\`, venus
\`coral\`). Its \`tools\` (only there: the answer has no top-level \`tools\`; descriptions in ASCII) are
\`{type: "function", name, description, parameters}\` with a strict JSON Schema each; by
default their names come from the voice server's read-only allow-list (mars: search,
query, get_page, read_article; venus: search, query, get_page, list_pages, find_experts,
get_recent_salience, get_recent_transcripts, read_article), narrowed, renamed or reworded
by the brain's \`personas/tools.json\`; write-shaped tools only with
\`VOICE_WRITE_TOOLS=true\`. The tool names the prompt mentions are exactly these.

A call link always connects: an empty or unknown \`timezone\` compiles in the operator's zone
(heartbeat-state, else \`DEFAULT_TIMEZONE\`) with a \`timezone-invalid:\` warning naming the value
(PII-scrubbed, escaped, at most 64 characters), traced only by its length and a digest prefix,
so a refresh of that connect compiles in the operator's zone too (\`POST /compile\` stays strict:
there an invalid zone is a 400). And an unusable \`topicId\` never fails the call. It gives the
generic context and a warning that starts with a stable code — \`topic-unsafe:\` (not a
slug, or given twice: nothing is read), \`topic-missing:\` (no such file) or
\`topic-unreadable:\` (refused, unreadable, binary or empty) — and is traced like any
other delivery (an unsafe id only by its length and a digest prefix). A \`topicName\`
without a topic block to put it in is said in one sanitised advisory topic line, source
\`request:topicName\` ("Called from the topic 'Flat hunt'; no notes on it yet."). Delivered like
\`POST /compile\`: traced before it is sent, \`ETag\`/\`If-None-Match\`, \`format=text\`,
\`x-run-id\`.

\`provider\` names the realtime API the answer is for (docs/providers.md):
\`openai\` (default) answers \`session\`; \`azure\` answers the same \`session\` (Azure
OpenAI takes OpenAI's shape; the model you add is your deployment name); \`gemini\` answers
\`setup\` instead — Gemini Live's \`{generationConfig: {responseModalities: ["AUDIO"],
speechConfig: {voiceConfig: {prebuiltVoiceConfig: {voiceName}}}}, systemInstruction:
{parts: [{text}]}, tools: [{functionDeclarations}]}\`, the same realtime-safe instructions,
the persona's Gemini voice (mars Orus, venus Aoede by default) and the tools' parameters
translated to the schema subset Gemini takes (what a translation loses is said in the
description and in \`warnings\`, \`gemini-schema:\`). The cache plan is judged for the
provider (\`cache.provider\`; Gemini Live caches nothing). Anything else is a 400.

\`model\` names the realtime model the call runs on; it is recorded with the run and chooses
how the call's refreshes reach the model, which \`delivery\` says as the refresh will answer
it (docs/providers.md): \`conversation-item\` (OpenAI, Azure), \`client-content\` (a Gemini
Live model that takes client content mid-session), \`reconnect\` (Gemini 3.1 and later; a
Gemini model not known, or none named, gets it too, with a \`delivery-model-unknown:\`
warning).

\`engine\` names the model or engine the prompt is for; it enters \`cache.routeKey\` only (two
engines never share one; every boundary hash stays). \`?hud=1\` adds \`hud\`, the heads-up
display of every brain file the compile looked for.

\`view=session\` answers only what a realtime connect uses (\`PersonaSession\`): \`session\`
(or \`setup\`), \`runId\`, \`persona\`, \`provider\`, \`warnings\`, \`delivery\`, \`promptSha256\`
and \`cacheBoundaries\` (each boundary's class, prefix length and digest, to match the connect
to its trace); it has its own \`ETag\` (suffix \`.session\`), is traced like the full answer
(the request records \`view\`), and is a 400 with \`format=text\` or \`hud=1\`.`,
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
