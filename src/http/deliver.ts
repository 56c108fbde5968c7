/**
 * The one way a compile route hands its outcome to the caller. Success and failure both
 * pass through `deliver`, so whatever must happen to every delivery (the trace event,
 * metrics, the run id header) happens in one place.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sha256Hex } from '../core/digest.js';
import type { CompiledContext, Subject } from '../core/types.js';
import { ProblemError } from '../errors.js';
import type { SourceRecord } from '../io/brain.js';
import type { TraceEventInput } from '../io/trace-store.js';
import { asProblemError, toProblem } from './problem.js';

export type DeliveryFormat = 'json' | 'text';

interface DeliveryBase {
  /** Route pattern, e.g. `POST /compile` or `GET /context/mars`. */
  route: string;
  runId: string;
  subject: Subject;
  surface: string;
  /** Identifiers of the request (worker, channelId, topicId, phase, ...): never text, prompts or tokens. */
  identifiers: Record<string, string | number | boolean | null>;
  /** Options that shaped the prompt (timezone, now, sanitize, item counts), recorded in the trace: never text or tokens. */
  options?: Record<string, unknown>;
  /** Brain files read for this compile, with their digests. */
  sources: SourceRecord[];
  /** Warnings from reading sources (the compile adds its own). */
  warnings: string[];
  timing: {
    /** Epoch ms when the request began to be handled. */
    startedAt: number;
    /** Time spent reading sources, ms. */
    readMs: number;
    /** Time spent in `compile()`, ms. */
    compileMs: number;
  };
  format: DeliveryFormat;
}

export interface CompiledDelivery extends DeliveryBase {
  compiled: CompiledContext;
  /** Extra response members for this route (persona routes: liveContext, topic, voice, tools). */
  extra?: Record<string, unknown>;
}

export interface FailedDelivery extends DeliveryBase {
  error: unknown;
}

export type Delivery = CompiledDelivery | FailedDelivery;

/** The run id the caller chose (already validated by the route schema) or a new one. */
export function runIdFor(given: string | undefined): string {
  return given ?? randomUUID();
}

/** Strong validator of the delivered prompts in one representation. */
export function etagFor(compiled: Pick<CompiledContext, 'promptSha256' | 'inputSha256'>, format: DeliveryFormat): string {
  const digest = sha256Hex(`${compiled.promptSha256}\n${compiled.inputSha256 ?? '-'}`).slice(0, 40);
  return `"${digest}${format === 'text' ? '.txt' : ''}"`;
}

/** RFC 9110 §13.1.2: weak comparison, `*` matches any current representation. */
export function ifNoneMatchHits(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const opaque = etag.replace(/^W\//, '');
  for (const candidate of [header].flat().join(',').split(',')) {
    const trimmed = candidate.trim();
    if (trimmed === '*' || trimmed.replace(/^W\//, '') === opaque) return true;
  }
  return false;
}

/**
 * Delivers a compile outcome, durably traced first (SPEC §6): the event is appended to
 * `app.traces` and awaited before anything of the prompt leaves. On success the JSON body
 * (or `text/plain` instructions), `ETag`, `Server-Timing`, and 304 when `If-None-Match`
 * already holds these prompts; on failure the problem, through the root error handler.
 * If the event cannot be made durable the caller gets a 503 `CC_TRACE_UNAVAILABLE` and no
 * prompt, digest or ETag. `x-run-id` is on every answer.
 */
export async function deliver(request: FastifyRequest, reply: FastifyReply, delivery: Delivery): Promise<FastifyReply> {
  reply.header('x-run-id', delivery.runId);
  const { metrics, traces } = request.server;
  if (!('compiled' in delivery)) {
    const problem = asProblemError(delivery.error);
    const { status, detail } = toProblem(problem, request);
    try {
      await traces.append({ ...eventBase(request, delivery, status), outcome: 'failed', error: { code: problem.code, status, detail } });
    } catch (traceError) {
      throw notTraced(request, delivery.route, traceError, `The compile failed (${problem.code}, ${status}) and was not traced.`);
    }
    metrics.compileFailures.inc({ route: delivery.route, code: problem.code });
    throw problem;
  }

  const { compiled } = delivery;
  const etag = etagFor(compiled, delivery.format);
  const notModified = ifNoneMatchHits(request.headers['if-none-match'], etag);
  const warnings = delivery.warnings.length === 0 ? compiled.warnings : [...delivery.warnings, ...compiled.warnings];
  const tracing = performance.now();
  try {
    await traces.append({
      ...eventBase(request, delivery, notModified ? 304 : 200),
      outcome: notModified ? 'not-modified' : 'delivered',
      // The store keeps the summary fields and drops `content`: the text lives in the segments, stored once.
      blocks: compiled.blocks,
      segments: compiled.segments,
      promptSha256: compiled.promptSha256,
      inputSha256: compiled.inputSha256,
      budget: compiled.budget,
      cache: compiled.cache,
      tokens: compiled.tokens,
      redactions: compiled.redactions,
      warnings,
    });
  } catch (traceError) {
    throw notTraced(request, delivery.route, traceError, 'No prompt was delivered.');
  }
  const traceMs = performance.now() - tracing;
  const { readMs, compileMs } = delivery.timing;
  reply
    .header('etag', etag)
    .header('cache-control', 'private, no-cache')
    .header('server-timing', `read;dur=${readMs.toFixed(2)}, compile;dur=${compileMs.toFixed(2)}, trace;dur=${traceMs.toFixed(2)}`);
  if (notModified) return reply.code(304).send();
  if (delivery.format === 'text') return reply.type('text/plain; charset=utf-8').send(compiled.instructions);
  return reply.type('application/json; charset=utf-8').send({
    runId: delivery.runId,
    [delivery.subject.kind]: delivery.subject.id,
    surface: delivery.surface,
    ...(typeof delivery.identifiers['phase'] === 'string' ? { phase: delivery.identifiers['phase'] } : {}),
    systemPrompt: compiled.systemPrompt,
    inputPrompt: compiled.inputPrompt,
    instructions: compiled.instructions,
    tokens: compiled.tokens,
    redactions: compiled.redactions,
    promptSha256: compiled.promptSha256,
    inputSha256: compiled.inputSha256,
    blocks: compiled.blocks.map(({ content: _content, ...summary }) => summary),
    budget: compiled.budget,
    cache: compiled.cache,
    sources: delivery.sources,
    ...delivery.extra,
    warnings,
  });
}

/** What every event of a delivery records, whatever its outcome. */
function eventBase(request: FastifyRequest, delivery: Delivery, status: number): Omit<TraceEventInput, 'outcome'> {
  const { startedAt, readMs, compileMs } = delivery.timing;
  const at = Date.now();
  return {
    runId: delivery.runId,
    at: new Date(at).toISOString(),
    route: delivery.route,
    subject: delivery.subject,
    surface: delivery.surface,
    status,
    request: {
      ...delivery.identifiers,
      ...delivery.options,
      format: delivery.format,
      conditional: request.headers['if-none-match'] !== undefined,
    },
    sources: delivery.sources,
    ...(delivery.warnings.length > 0 ? { warnings: delivery.warnings } : {}),
    // The event cannot hold its own write time: that is `trace` in Server-Timing and cc_trace_write_duration_seconds.
    timing: { readMs: round(readMs), compileMs: round(compileMs), untilTraceMs: Math.max(0, at - startedAt) },
  };
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** The 503 for a delivery whose trace event could not be made durable; nothing of the prompt goes with it. */
function notTraced(request: FastifyRequest, route: string, traceError: unknown, what: string): ProblemError {
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
