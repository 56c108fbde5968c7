/**
 * The trace event a delivery appends before anything of the prompt leaves, and the problem
 * the caller gets instead when it cannot be appended.
 */
import { performance } from 'node:perf_hooks';
import type { FastifyRequest } from 'fastify';
import type { Hud } from '../core/hud.js';
import { ProblemError } from '../errors.js';
import { compiledEventFields, type TraceEventInput } from '../io/trace/index.js';
import { runScope } from './auth.js';
import type { CompiledDelivery, Delivery, FailedDelivery } from './delivery.js';
import { asProblemError } from './problem.js';

/** The event of a compiled delivery, answered 200 or (`notModified`) 304. */
export function compiledEvent(request: FastifyRequest, delivery: CompiledDelivery, described: { warnings: readonly string[]; hud: Hud }, notModified: boolean): TraceEventInput {
  const { result } = delivery;
  return {
    ...eventBase(request, delivery, notModified ? 304 : 200),
    outcome: notModified ? 'not-modified' : 'delivered',
    ...compiledEventFields(result.compiled),
    warnings: [...described.warnings],
    // The same tools object on every call of a persona: the store keeps its definitions once.
    ...(result.realtime === undefined ? {} : { realtime: result.realtime }),
    hud: described.hud,
    ...(result.record?.recall ? { recall: result.record.recall } : {}),
    ...(result.record?.receipts ? { receipts: result.record.receipts } : {}),
    ...(result.record?.refresh ? { refresh: result.record.refresh } : {}),
  };
}

/** The event of a failed delivery: the problem's code, status and detail. */
export function failedEvent(request: FastifyRequest, delivery: FailedDelivery, problem: { code: string; status: number; detail: string }): TraceEventInput {
  const { code, status, detail } = problem;
  return { ...eventBase(request, delivery, status), outcome: 'failed', error: { code, status, detail } };
}

/** What every event of a delivery records, whatever its outcome. */
function eventBase(request: FastifyRequest, delivery: Delivery, status: number): Omit<TraceEventInput, 'outcome'> {
  const { readMs, compileMs } = delivery.timing;
  // Derived from the request's one clock reading: the wall clock is not read again.
  const sinceStart = Math.max(0, Math.round(performance.now() - delivery.clock.began));
  const { caller } = runScope(request);
  return {
    runId: delivery.runId,
    ...(delivery.parentRunId !== undefined ? { parentRunId: delivery.parentRunId } : {}),
    at: new Date(delivery.clock.startedAt + sinceStart).toISOString(),
    route: delivery.route,
    subject: delivery.subject,
    // The caller's name, never its token: the run is its opener's.
    ...(caller !== undefined ? { caller } : {}),
    surface: delivery.surface,
    status,
    requestId: String(request.id),
    ...(request.traceparent !== null ? { traceparent: request.traceparent } : {}),
    request: {
      ...delivery.identifiers,
      ...delivery.options,
      format: delivery.format,
      conditional: request.headers['if-none-match'] !== undefined,
    },
    // As handed out (never changed): a replayed session's are the same arrays on every delivery, so the store writes their references once.
    sources: delivery.sources as TraceEventInput['sources'] & object,
    ...(delivery.absent.length > 0 ? { absent: delivery.absent.map((path) => ({ path })) } : {}),
    ...(delivery.listings.length > 0 ? { listings: delivery.listings as TraceEventInput['listings'] & object } : {}),
    ...(delivery.warnings.length > 0 ? { warnings: [...delivery.warnings] } : {}),
    // The event cannot hold its own write time: that is `trace` in Server-Timing and cc_trace_write_duration_seconds.
    timing: { readMs: round(readMs), compileMs: round(compileMs), untilTraceMs: sinceStart },
  };
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** The 503 (or the run's own refusal) for a delivery whose trace event could not be made durable; nothing of the prompt goes with it. */
export function notTraced(request: FastifyRequest, route: string, traceError: unknown, what: string): ProblemError {
  if (traceError instanceof ProblemError && (traceError.code === 'CC_RUN_OWNED' || traceError.code === 'CC_RUN_FULL')) {
    // Refused by the run itself: the event cannot go into it, and nothing is delivered outside a run.
    request.server.metrics.compileFailures.inc({ route, code: traceError.code });
    return new ProblemError(traceError.code, `${what} ${traceError.detail}`, { cause: traceError, ...(traceError.extensions ? { extensions: traceError.extensions } : {}) });
  }
  if (!(traceError instanceof ProblemError) || traceError.code !== 'CC_TRACE_UNAVAILABLE') {
    const problem = asProblemError(traceError);
    request.server.metrics.compileFailures.inc({ route, code: problem.code });
    return problem;
  }
  request.server.metrics.compileFailures.inc({ route, code: 'CC_TRACE_UNAVAILABLE' });
  return new ProblemError('CC_TRACE_UNAVAILABLE', `${what} ${traceError.detail} Retry once /readyz answers 200.`, {
    cause: traceError,
    headers: { 'retry-after': '1' },
  });
}
