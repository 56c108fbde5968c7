import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { DEFAULT_POLICY, mergePolicy } from '../src/core/policy.js';
import { parseInstant } from '../src/core/time.js';
import { createAnswerEncoder } from '../src/http/answer.js';
import { ProblemError } from '../src/errors.js';
import { deliverJob, ifNoneMatchAny, readClock, runIdFor, wantsHud } from '../src/http/deliver.js';
import { delivered, notModified, problems, traceUnavailable } from '../src/http/openapi.js';
import { createWorkerSources } from '../src/sources/worker.js';
import { CompileQuerySchema, CompileRequestSchema } from '../schemas/compile.js';
import { CompiledResponseSchema, WorkerResultSchema } from '../schemas/compiled.js';
import { MAX_RUN_EVENTS } from '../schemas/trace.js';

/** `POST /compile`: a worker's prompt for one phase of a conversation or task. */
export const compileRoutes: FastifyPluginAsyncZod = async (app) => {
  const workers = createWorkerSources(
    { policy: mergePolicy(DEFAULT_POLICY, { limitChars: app.config.promptLimitChars }), defaultTimeZone: app.config.defaultTimezone },
    { compiler: app.compiler, memo: app.sourceMemo },
  );
  const answer = createAnswerEncoder(CompiledResponseSchema, WorkerResultSchema);

  app.post(
    '/compile',
    {
      schema: {
        operationId: 'compileWorker',
        summary: "Compile a worker's prompt for one phase of a conversation or task",
        description: `Reads \`workers/<worker>/identity.md\` (legacy \`charter.md\`), \`workers/<worker>/policy.json\`,
\`workers/<worker>/connections.json\`, the role (\`workers/<worker>/roles/<role>.md\`),
\`workers/<worker>/memory/*.md\`, \`channels/<channelId>/purpose.md\` and \`platform/blueprint.md\` from
the brain and compiles them with the request's items (docs/compiler.md). Phase \`start\` may
carry a task but no message; phase \`turn\` carries exactly one message and no task. The
\`ETag\` covers the delivered prompts and, in JSON, the cache plan (whose route key carries
\`engine\`), the budget, recall and receipts, and the HUD with \`?hud=1\`; \`If-None-Match\` with it
answers 304.

\`recall\` says whether memory notes were recalled: a worker whose policy is \`clean-room\`
recalls none on a clean run (no \`message\`, \`channelId\` or \`evidence\`). \`receipts\` record
what shaped the prompt: the role (id, how chosen, digest), the blueprint (revision and
digest, or \`none\`), the experiences applied and the preferences applied. A role the worker
does not admit is a 422 \`CC_ROLE_NOT_ADMITTED\` naming it; an admitted role without its file
a 404 naming the file. \`engine\` enters the route key only. \`?hud=1\` adds \`hud\`.

A compile is a safe retrieval here, so \`If-None-Match\` with an ETag answers 304 when it holds,
as on GET. \`If-None-Match: *\` asks to act only if the target has no representation, which a
compile always has: a 412 \`CC_PRECONDITION_FAILED\` before anything is compiled or traced
(RFC 9110 §13.1.2).

A run belongs to the caller that opened it and holds at most ${MAX_RUN_EVENTS.toLocaleString('en-US')} events: an append to
another caller's run is a 409 \`CC_RUN_OWNED\`, to a full one a 409 \`CC_RUN_FULL\`, and
nothing is delivered (docs/traces.md, "Runs are bounded and belong to their caller").

Every answer — 200, 304 or a failed compile — is first appended to the run's trace
(\`GET /runs/{runId}/trace\`) and made durable; \`x-run-id\` names the run on every answer
that reached the compile, failures included (not on requests rejected before it:
validation, authentication, body limits, rate limits, and the 503s \`CC_OVERLOADED\` and
\`CC_SHUTTING_DOWN\`). If the trace event cannot be made
durable the answer is a 503 \`CC_TRACE_UNAVAILABLE\` with no prompt (docs/traces.md, "What is
traced when").`,
        querystring: CompileQuerySchema,
        body: CompileRequestSchema,
        response: {
          200: delivered(CompiledResponseSchema, 'the compiled prompt'),
          ...notModified,
          ...problems(400, 401, 404, 409, 412, 413, 415, 422, 429),
          ...traceUnavailable,
        },
      },
    },
    async (request, reply) => {
      if (ifNoneMatchAny(request.headers['if-none-match'])) {
        throw new ProblemError('CC_PRECONDITION_FAILED', 'If-None-Match: * holds for no compile (every compile has a representation): send the ETag of an earlier answer, or no If-None-Match.', {
          errors: [{ path: '/headers/if-none-match', message: '"*" is not a condition a compile can meet' }],
        });
      }
      const { body } = request;
      const clock = readClock();
      const { runId: given, now, ...turn } = body;
      // `now` passed the schema's instant rule.
      const instant = now === undefined ? new Date(clock.startedAt) : parseInstant(now)!;
      return deliverJob(
        request,
        reply,
        {
          route: 'POST /compile',
          ...runIdFor(given),
          subject: { kind: 'worker', id: body.worker },
          surface: body.surface,
          identifiers: { worker: body.worker, channelId: body.channelId ?? null, phase: body.phase, surface: body.surface },
          // Counts, not the items: their text is in the delivered prompt, traced once.
          options: {
            now: now ?? null,
            // The instant the clock line and "today" were computed for: `now` with it reproduces the prompt.
            nowUsed: now ?? instant.toISOString(),
            timezone: body.timezone ?? null,
            preferences: body.preferences ?? null,
            capabilities: body.capabilities?.length ?? 0,
            briefing: body.briefing?.length ?? 0,
            evidence: body.evidence?.length ?? 0,
            experiences: body.experiences?.length ?? 0,
            role: body.role ?? null,
            engine: body.engine ?? null,
            task: body.task !== undefined,
            message: body.message !== undefined,
          },
          format: request.query.format ?? 'json',
          hud: wantsHud(request.query.hud),
          clock,
          answer,
        },
        workers.job({ ...turn, now: instant }),
      );
    },
  );
};
