import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { parseInstant } from '../src/core/time.js';
import { ProblemError } from '../src/errors.js';
import { createAnswerEncoder } from '../src/http/answer.js';
import { runScope } from '../src/http/auth.js';
import { deliveryFor } from '../src/core/persona/providers.js';
import { deliverJob, readClock } from '../src/http/deliver.js';
import { delivered, notModified, problems, traceUnavailable } from '../src/http/openapi.js';
import { createPersonaSources, personaOptions, personaOrNotFound, timezoneForTrace } from '../src/sources/persona.js';
import { sha256Hex } from '../src/core/digest.js';
import { catchUpBaseline, CONNECT_SEARCH_EVENTS, findConnect, refreshJob, refreshWarnings, type Connect, type ReadRun } from '../src/sources/persona/refresh.js';
import { PersonaParamsSchema } from '../schemas/context.js';
import { RefreshQuerySchema, RefreshResponseSchema, RefreshResultSchema, refreshRunId, type RefreshQuery } from '../schemas/refresh.js';
import { REFRESH_RUN_SUFFIX } from '../schemas/ids.js';

/**
 * `GET /context/:persona/refresh?runId=`: a mid-call refresh (issue 24). Compiles
 * the persona again with its connect's options and answers what changed in the live
 * context since, with the provider's event that delivers it — or a 304.
 */
export const refreshRoutes: FastifyPluginAsyncZod = async (app) => {
  const personas = createPersonaSources(personaOptions(app.config), { compiler: app.compiler, memo: app.sourceMemo });
  const answer = createAnswerEncoder(RefreshResponseSchema, RefreshResultSchema);

  app.get(
    '/context/:persona/refresh',
    {
      schema: {
        operationId: 'refreshPersonaContext',
        summary: "What changed in a persona's live context since the call connected",
        description: `A voice server calls this during a call, e.g. on each operator turn, with the \`runId\` of
the connect's answer (\`GET /context/:persona\`) and the \`ETag\` of its last refresh as
\`If-None-Match\`. It compiles the persona again — with the connect's \`topicId\`, \`timezone\`,
\`sanitize\` and \`engine\`, read from the connect's trace event, and the \`topicName\` given
again — and compares the live context and topic block with what the connect delivered.

- **304** when nothing in them changed since the connect (the clock alone does not count), or
  when \`If-None-Match\` holds this answer's ETag (what changed is what the last refresh said).
- **200** otherwise: \`text\`, only the changed lines (\`Since we connected, ...\`; each changed
  block as an advisory JSON line of its \`New:\` and \`No longer:\` lines, realtime-safe ASCII,
  with the clock of now), and \`event\`, the provider's own form to send it mid-session —
  OpenAI and Azure a \`conversation.item.create\` system message, Gemini \`clientContent\`
  with \`turnComplete: false\`. Never the whole instructions again, so the provider's cached
  prefix holds. Each 200 says everything changed since the connect, not since the last one.

How the change reaches the model (\`delivery\`) is chosen by the provider and \`model\` (the
connect's by default; docs/providers.md): \`conversation-item\` for OpenAI and Azure,
\`client-content\` for the Gemini Live models that take client content mid-session (2.x), and
\`reconnect\` for those that close the session on it (3.1 and later) or an unknown one (with a
warning) — then \`event\` is null and \`setup\` is the whole updated setup, to send on a new
connection with the call's sessionResumption handle.

A call that connected on a fallback while the service was out has no connect in its run:
its first refresh names what it was given (\`baseline=static\`, or \`stale\` with
\`baselineRunId\`) and the connect's \`topicId\` and \`timezone\`, and is traced as the first
event of run \`runId\` itself; it delivers everything the call misses, and later refreshes
compare with what it delivered.

Traced as its own run, \`<runId>:refresh\` (every refresh of one connect, 200 or 304, is an
event there), each event naming \`parentRunId\`; the viewer links the two. The connect must be
the caller's own: another caller's run, an unknown one or one without a delivered compile of
this persona is a 404 (nothing traced); a connect whose trace does not verify is a 422.`,
        params: PersonaParamsSchema,
        querystring: RefreshQuerySchema,
        response: {
          200: delivered(RefreshResponseSchema, 'what changed since the connect, and the event that delivers it'),
          ...notModified,
          ...problems(400, 401, 404, 409, 422, 429),
          ...traceUnavailable,
        },
      },
    },
    async (request, reply) => {
      const persona = personaOrNotFound(request.params.persona).key;
      const { query } = request;
      const clock = readClock();
      const scope = runScope(request);
      // Found before anything is traced: a refresh of a run that is not the caller's must not open `<runId>:refresh` for it.
      const readRun: ReadRun = (runId, read) => app.traces.readRun(runId, read);
      const found = await findConnect(readRun, query.runId, persona, scope, app.sourceMemo);
      const caughtUp = found === undefined && query.baseline !== undefined ? await catchUpConnect(readRun, query, persona, scope) : undefined;
      const connect = found ?? caughtUp?.connect;
      if (connect === undefined) {
        throw new ProblemError('CC_NOT_FOUND', `No connect of ${persona} to refresh in run ${query.runId}: it never ran here, is older than TRACE_RETENTION, delivered no ${persona} compile among its first ${CONNECT_SEARCH_EVENTS} events, or is not yours.`);
      }
      // A catch-up opens the call's own run; a refresh goes into `<runId>:refresh` beside its connect.
      const catchUp = found === undefined;
      if (catchUp && query.baseline !== undefined) app.metrics.refreshCatchUps.inc({ baseline: query.baseline });
      const provider = query.provider ?? connect.provider;
      const model = query.model ?? connect.model;
      const { delivery, warning } = deliveryFor(provider, model);
      const now = query.now === undefined ? new Date(clock.startedAt) : parseInstant(query.now)!;
      const job = personas.persona({ persona, now, ...connect.request, topicName: query.topicName, provider });
      const warnings = [...refreshWarnings(connect, provider, query.topicName), ...(warning === null ? [] : [warning]), ...ignoredCatchUpOptions(query, catchUp), ...(caughtUp?.warnings ?? [])];
      return deliverJob(
        request,
        reply,
        {
          route: `GET /context/${persona}/refresh`,
          ...(catchUp ? { runId: connect.runId, newRun: false } : { runId: refreshRunId(connect.runId), newRun: false, parentRunId: connect.runId }),
          subject: { kind: 'persona', id: persona },
          surface: 'voice',
          identifiers: { persona, topicId: connect.request.topicId ?? null },
          options: {
            now: query.now ?? null,
            nowUsed: query.now ?? now.toISOString(),
            // A catch-up's zone is the caller's text, not a connect's record: kept as a connect keeps it (a bad one as a digest).
            ...(catchUp ? catchUpZone(connect.request.timezone) : { timezone: connect.request.timezone ?? null }),
            sanitize: connect.request.sanitize ?? null,
            topicName: query.topicName !== undefined,
            topicNameSha256: catchUp && query.topicName !== undefined ? sha256Hex(query.topicName) : null,
            engine: connect.request.engine ?? null,
            provider,
            model: model ?? null,
            delivery,
            ...(catchUp ? { baseline: query.baseline, baselineRunId: query.baselineRunId ?? null } : {}),
          },
          format: 'json',
          clock,
          answer,
        },
        refreshJob(job, connect, provider, delivery, query.topicName, warnings),
      );
    },
  );
};

/**
 * The connect a catch-up compares with (`?baseline=`), for a call whose run `query.runId`
 * holds no connect: the static session's (no live context), or the stale session's connect
 * (run `baselineRunId`, the caller's own, of this persona). A stale connect no longer found
 * here (past TRACE_RETENTION, or never traced where this replica reads) is taken as static,
 * with a warning: the call then gets its whole live context again, never nothing. Undefined
 * when the run is a refresh run (only a connect's refresh opens one).
 */
async function catchUpConnect(readRun: ReadRun, query: RefreshQuery, persona: string, scope: { caller: string | undefined; visibleTo: string | null }): Promise<{ connect: Connect; warnings: string[] } | undefined> {
  if (query.runId.endsWith(REFRESH_RUN_SUFFIX)) return undefined;
  let stale: Connect | null = null;
  const warnings: string[] = [];
  if (query.baseline === 'stale') {
    if (query.baselineRunId === undefined) throw new ProblemError('CC_BAD_REQUEST', 'baseline=stale needs baselineRunId: the run of the stale session the call was given.');
    stale = (await findConnect(readRun, query.baselineRunId, persona, scope)) ?? null;
    if (stale === null) warnings.push(`refresh-baseline-missing: no connect of ${persona} in run ${query.baselineRunId} (the stale session's); the whole live context is delivered, as to a static session`);
  }
  const connect = catchUpBaseline(query.runId, stale, { provider: query.provider ?? stale?.provider ?? 'openai', model: query.model, timezone: query.timezone, topicId: query.topicId });
  return { connect, warnings };
}

/** What the trace keeps of a catch-up's `timezone`: the zone when it is one, else its length and digest only. */
function catchUpZone(timezone: string | undefined): { timezone: string | null; timezoneRejected?: { reason: 'invalid'; chars: number; sha256: string } } {
  const zone = timezoneForTrace(timezone);
  return zone.rejected === undefined ? { timezone: zone.timezone } : { timezone: null, timezoneRejected: zone.rejected };
}

/** The catch-up's options given to a refresh that is not one: ignored, and said so. */
function ignoredCatchUpOptions(query: RefreshQuery, catchUp: boolean): string[] {
  if (catchUp) return [];
  const given = (['baseline', 'baselineRunId', 'topicId', 'timezone'] as const).filter((name) => query[name] !== undefined);
  return given.length === 0 ? [] : [`refresh-catch-up-ignored: run ${query.runId} holds its connect; ${given.join(', ')} ignored (the connect's are used)`];
}
