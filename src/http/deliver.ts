/**
 * The one way a compile route hands its outcome to the caller. A route maps HTTP to a
 * compile job (`src/sources/job.ts`); `deliverJob` runs it through a per-request brain
 * session and merges what it returns (nothing is changed after the fact), and success and
 * failure both pass through `deliver`, so whatever must happen to every delivery (the trace
 * event, metrics, the run id header) happens in one place. Its parts: what a delivery is
 * (`delivery.ts`), what delivery keeps of a shared result (`delivered.ts`), conditional
 * requests (`conditional.ts`) and the trace event (`trace-event.ts`).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CompiledContext } from '../core/types.js';
import type { Brain } from '../io/brain.js';
import type { CompileJob, JobRead, JobResult } from '../sources/job.js';
import { notModified } from './conditional.js';
import { answerBody, describe } from './delivered.js';
import type { Delivery, DeliveryRequest, RequestClock } from './delivery.js';
import { asProblemError, toProblem } from './problem.js';
import type { CompileFacts } from './telemetry.js';
import { compiledEvent, failedEvent, notTraced } from './trace-event.js';

export type { DeliveryFormat, DeliveryRequest, RequestClock } from './delivery.js';
export { ifNoneMatchAny, ifNoneMatchHits } from './conditional.js';

export function readClock(): RequestClock {
  return { startedAt: Date.now(), began: performance.now() };
}

/** Whether a route's `?hud=` asks for the HUD in the answer. */
export function wantsHud(flag: string | undefined): boolean {
  return flag === '1' || flag === 'true';
}

/** The run id the caller chose (already validated by the route schema), or a new one the service made up. */
export function runIdFor(given: string | undefined): { runId: string; newRun: boolean } {
  return given === undefined ? { runId: randomUUID(), newRun: true } : { runId: given, newRun: false };
}

/**
 * Runs `job`: its read through a new session of `brain` (so the trace lists every file
 * read), then its compile, timing both; a thrown problem is the outcome too. The delivery
 * merges the request, the job's warnings and resolved options, the session's reads and the outcome.
 */
async function runJob(brain: Brain, request: DeliveryRequest, job: CompileJob): Promise<{ delivery: Delivery; read: boolean }> {
  const session = brain.session();
  const began = performance.now();
  let found: JobRead | undefined;
  let readMs = 0;
  let compileMs = 0;
  let outcome: { result: JobResult } | { error: unknown };
  try {
    found = await job.read(session);
    readMs = performance.now() - began;
    outcome = { result: found.compile() };
    compileMs = performance.now() - began - readMs;
  } catch (error) {
    outcome = { error };
  }
  const delivery: Delivery = {
    ...request,
    options: found === undefined ? request.options : { ...request.options, ...found.resolved },
    warnings: found?.warnings ?? [],
    sources: session.sources(),
    absent: session.absent(),
    listings: session.listings(),
    loaded: session.loaded(),
    replayed: session.replayed(),
    timing: { readMs, compileMs },
    ...outcome,
  };
  return { delivery, read: found !== undefined };
}

/** The one path of every compile route: run the job and `deliver` its outcome, a thrown problem included. */
export async function deliverJob(request: FastifyRequest, reply: FastifyReply, delivery: DeliveryRequest, job: CompileJob): Promise<FastifyReply> {
  const { brain, metrics } = request.server;
  const ran = await runJob(brain, delivery, job);
  if (ran.read) metrics.readDuration.observe({ route: delivery.route }, ran.delivery.timing.readMs / 1000);
  if ('result' in ran.delivery) metrics.compileDuration.observe({ route: delivery.route }, ran.delivery.timing.compileMs / 1000);
  return deliver(request, reply, ran.delivery);
}

/**
 * Everything a delivery of `job` builds but the delivery: read, compiled, described
 * (warnings, HUD, ETag) and its JSON answer written — no trace event, no metric, no reply.
 * The warm-up's way to build what a first request would. Resolves true when the session
 * read the brain afresh (nothing it kept was replayed).
 */
export async function rehearse(app: FastifyInstance, request: Pick<DeliveryRequest, 'route' | 'subject' | 'surface' | 'identifiers' | 'view' | 'answer' | 'answerMembers'>, job: CompileJob): Promise<boolean> {
  const { delivery } = await runJob(app.brain, { ...request, runId: 'warm-up', newRun: true, options: {}, format: 'json', clock: readClock() }, job);
  if ('error' in delivery) throw delivery.error;
  const kept = app.delivered.of(delivery.result);
  const { warnings, hud } = describe(delivery, app.delivered, kept);
  answerBody(delivery, kept, warnings, hud);
  return delivery.replayed === undefined;
}

/**
 * Delivers a compile outcome, durably traced first: the event is appended to
 * `app.traces` and awaited before anything of the prompt leaves. On success the JSON body
 * (or `text/plain` instructions), `ETag`, `Server-Timing`, and 304 when `If-None-Match`
 * already holds these prompts; on failure the problem, through the root error handler.
 * If the event cannot be made durable the caller gets a 503 `CC_TRACE_UNAVAILABLE` and no
 * prompt, digest or ETag. `x-run-id` is on every answer.
 */
export async function deliver(request: FastifyRequest, reply: FastifyReply, delivery: Delivery): Promise<FastifyReply> {
  reply.header('x-run-id', delivery.runId);
  const { metrics, traces, delivered } = request.server;
  if ('error' in delivery) {
    const problem = asProblemError(delivery.error);
    const { status, detail } = toProblem(problem, request);
    const facts = (reply.compileFacts = compileFacts(delivery, null, delivery.warnings.length, problem.code));
    const tracing = performance.now();
    try {
      await traces.append(failedEvent(request, delivery, { code: problem.code, status, detail }), { newRun: delivery.newRun });
    } catch (traceError) {
      const refused = notTraced(request, delivery.route, traceError, `The compile failed (${problem.code}, ${status}) and was not traced.`);
      facts.code = refused.code;
      throw refused;
    }
    facts.traceMs = performance.now() - tracing;
    metrics.compileFailures.inc({ route: delivery.route, code: problem.code });
    throw problem;
  }

  const { compiled } = delivery.result;
  const kept = delivered.of(delivery.result);
  const described = describe(delivery, delivered, kept);
  const unchanged = notModified(delivery.result, request.headers['if-none-match'], described.etag);
  const facts = (reply.compileFacts = compileFacts(delivery, compiled, described.warnings.length, null));
  const tracing = performance.now();
  try {
    await traces.append(compiledEvent(request, delivery, described, unchanged), { newRun: delivery.newRun, result: kept === undefined ? undefined : delivery.result });
  } catch (traceError) {
    const refused = notTraced(request, delivery.route, traceError, 'No prompt was delivered.');
    facts.code = refused.code;
    throw refused;
  }
  const traceMs = (facts.traceMs = performance.now() - tracing);
  const { redactions } = compiled;
  if (redactions.email > 0) metrics.redactions.inc({ kind: 'email' }, redactions.email);
  if (redactions.phone > 0) metrics.redactions.inc({ kind: 'phone' }, redactions.phone);
  const { readMs, compileMs } = delivery.timing;
  reply
    .header('etag', described.etag)
    .header('cache-control', 'private, no-cache')
    .header('server-timing', `read;dur=${readMs.toFixed(2)}, compile;dur=${compileMs.toFixed(2)}, trace;dur=${traceMs.toFixed(2)}`);
  if (unchanged) return reply.code(304).send();
  if (delivery.format === 'text') return reply.type('text/plain; charset=utf-8').send(compiled.instructions);
  // A string or Buffer body is sent as it is: the route's response schema describes it, its encoder wrote it.
  return reply.type('application/json; charset=utf-8').send(answerBody(delivery, kept, described.warnings, described.hud));
}

/** What the answer's span may say of this delivery (`src/http/telemetry.ts`): identifiers, digests and counts, never text. */
function compileFacts(delivery: Delivery, compiled: CompiledContext | null, warnings: number, code: string | null): CompileFacts {
  let cachePrefixTokens: number | null = null;
  if (compiled !== null) {
    cachePrefixTokens = 0;
    for (const boundary of compiled.cache.boundaries) if (boundary.class !== 'volatile') cachePrefixTokens = Math.max(cachePrefixTokens, boundary.tokens);
  }
  return {
    subject: delivery.subject,
    runId: delivery.runId,
    provider: compiled?.cache.provider ?? null,
    promptSha256: compiled?.promptSha256 ?? null,
    promptTokens: compiled?.tokens.total ?? null,
    cachePrefixTokens,
    warnings,
    traceMs: null,
    code,
  };
}
