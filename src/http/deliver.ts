/**
 * The one way a compile route hands its outcome to the caller. Success and failure both
 * pass through `deliver`, so whatever must happen to every delivery (the trace event,
 * metrics, the run id header) happens in one place.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sha256Hex } from '../core/digest.js';
import type { CompiledContext, Subject } from '../core/types.js';
import type { SourceRecord } from '../io/brain.js';
import { asProblemError } from './problem.js';

export type DeliveryFormat = 'json' | 'text';

interface DeliveryBase {
  /** Route pattern, e.g. `POST /compile` or `GET /context/mars`. */
  route: string;
  runId: string;
  subject: Subject;
  surface: string;
  /** Identifiers of the request (worker, channelId, topicId, phase, ...): never text, prompts or tokens. */
  identifiers: Record<string, string | number | boolean | null>;
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
 * Delivers a compile outcome: on success the JSON body (or `text/plain` instructions),
 * `ETag`, `x-run-id`, and 304 when `If-None-Match` already holds these prompts; on
 * failure the problem, through the root error handler, with the run id still attached.
 */
export async function deliver(request: FastifyRequest, reply: FastifyReply, delivery: Delivery): Promise<FastifyReply> {
  reply.header('x-run-id', delivery.runId);
  if (!('compiled' in delivery)) {
    const problem = asProblemError(delivery.error);
    request.server.metrics.compileFailures.inc({ route: delivery.route, code: problem.code });
    throw problem;
  }
  const { compiled } = delivery;
  const etag = etagFor(compiled, delivery.format);
  reply.header('etag', etag).header('cache-control', 'private, no-cache');
  if (ifNoneMatchHits(request.headers['if-none-match'], etag)) return reply.code(304).send();
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
    warnings: [...delivery.warnings, ...compiled.warnings],
  });
}
