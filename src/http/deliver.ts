/**
 * The one way a compile route hands its outcome to the caller. Success and failure both
 * pass through `deliver`, so whatever must happen to every delivery (the trace event,
 * metrics, the run id header) happens in one place.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sha256Hex } from '../core/digest.js';
import type { RealtimeSession } from '../core/persona/session.js';
import type { PersonaTool } from '../core/persona/tools.js';
import type { CompiledContext, Subject } from '../core/types.js';
import { ProblemError } from '../errors.js';
import type { BrainSession, ListingRecord, SourceRecord } from '../io/brain.js';
import type { TraceEventInput } from '../io/trace/index.js';
import { BlockSummarySchema, CacheBoundarySchema, CachePlanSchema, SourceSummarySchema, TopicSummarySchema } from '../../schemas/compiled.js';
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
  /** Brain paths looked for and found missing, and the directory listings relied on (trace only). */
  absent?: string[];
  listings?: ListingRecord[];
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
  /** The compiled result is memoised and delivered again: what is derived from it (ETag, JSON) is kept with it. */
  shared?: boolean;
}

export interface FailedDelivery extends DeliveryBase {
  error: unknown;
}

export type Delivery = CompiledDelivery | FailedDelivery;

/** What a compile route knows before reading anything: everything of a delivery but its outcome. */
export type DeliveryRequest = Omit<CompiledDelivery, 'compiled' | 'extra' | 'shared' | 'sources' | 'absent' | 'listings' | 'timing'>;

/** Reads a route's sources (warnings added), then returns the compile to run. */
export type BuildCompile = (
  brain: BrainSession,
  startedAt: number,
) => Promise<{ warnings: string[]; compile(): Pick<CompiledDelivery, 'compiled' | 'extra' | 'shared'> }>;

/**
 * The one path of every compile route: read sources through a per-request brain session
 * (so the trace lists every file read), compile, and `deliver` the outcome — a thrown
 * problem included — with read and compile timings.
 */
export async function compileAndDeliver(request: FastifyRequest, reply: FastifyReply, base: DeliveryRequest, build: BuildCompile): Promise<FastifyReply> {
  const startedAt = Date.now();
  const began = performance.now();
  const brain = request.server.brain.session();
  let readMs = 0;
  let compileMs = 0;
  let outcome: Pick<CompiledDelivery, 'compiled' | 'extra' | 'shared'> | Pick<FailedDelivery, 'error'>;
  try {
    const built = await build(brain, startedAt);
    base.warnings.push(...built.warnings);
    readMs = performance.now() - began;
    outcome = built.compile();
    compileMs = performance.now() - began - readMs;
  } catch (error) {
    outcome = { error };
  }
  const relied = { sources: brain.sources(), absent: brain.absent(), listings: brain.listings() };
  return deliver(request, reply, { ...base, ...outcome, ...relied, timing: { startedAt, readMs, compileMs } });
}

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
  // Only a shared result is worth remembering; a one-off one would only load the weak map.
  const parts: CompiledParts = delivery.shared === true ? partsOf(compiled) : { etags: {} };
  const etag = (parts.etags[delivery.format] ??= etagFor(compiled, delivery.format));
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
  // A string body is sent as it is: the route's response schema describes it, this writes it.
  return reply.type('application/json; charset=utf-8').send(responseJson(delivery, parts, warnings));
}

// The JSON body, byte for byte what the route's schema serializer (fast-json-stringify over
// schemas/compiled.ts and schemas/context.ts) writes: only the schemas' members, required
// members first in schema order, then the optional ones (`worker`, `surface`, `phase`). The
// prompts, block summaries and cache plan of a compiled result are escaped once per result
// (a persona route hands back the same result for a minute), not once per response.
const BLOCK_KEYS = Object.keys(BlockSummarySchema.shape);
const CACHE_KEYS = [...Object.keys(CachePlanSchema.shape), ...Object.keys(CacheBoundarySchema.shape)];
const SOURCE_KEYS = Object.keys(SourceSummarySchema.shape);
const TOPIC_KEYS = Object.keys(TopicSummarySchema.shape);
const extraJson = new WeakMap<Record<string, unknown>, string>();

/** What is derived from a compiled result alone, kept while the result is (persona routes share one per minute). */
interface CompiledParts {
  etags: Partial<Record<DeliveryFormat, string>>;
  /** `"systemPrompt":…` through `"cache":…`: text on first delivery, UTF-8 bytes once delivered again. */
  json?: string | Buffer;
}

const compiledParts = new WeakMap<CompiledContext, CompiledParts>();

function partsOf(compiled: CompiledContext): CompiledParts {
  let parts = compiledParts.get(compiled);
  if (!parts) compiledParts.set(compiled, (parts = { etags: {} }));
  return parts;
}

function responseJson(delivery: CompiledDelivery, parts: CompiledParts, warnings: readonly string[]): string | Buffer {
  const { subject } = delivery;
  const phase = delivery.identifiers['phase'];
  // `persona` is required by the persona routes' schemas, `worker` optional in POST /compile's.
  const persona = subject.kind === 'persona' ? `"persona":${JSON.stringify(subject.id)},` : '';
  const worker = subject.kind === 'worker' ? `,"worker":${JSON.stringify(subject.id)}` : '';
  const head = `{"runId":${JSON.stringify(delivery.runId)},${persona}`;
  const tail =
    `,"sources":${JSON.stringify(delivery.sources, SOURCE_KEYS)},${delivery.extra === undefined ? '' : extraPart(delivery.extra)}` +
    `"warnings":${JSON.stringify(warnings)}${worker},"surface":${JSON.stringify(delivery.surface)}` +
    `${typeof phase === 'string' ? `,"phase":${JSON.stringify(phase)}` : ''}}`;
  // A result delivered once (POST /compile) goes out as text; one delivered again is kept as
  // bytes, so it is not encoded again on every socket write.
  if (parts.json === undefined) return head + (parts.json = compiledPart(delivery.compiled)) + tail;
  if (typeof parts.json === 'string') parts.json = Buffer.from(parts.json);
  return Buffer.concat([Buffer.from(head), parts.json, Buffer.from(tail)]);
}

/** `"systemPrompt":…` through `"cache":…`: what depends on the compiled result alone. */
function compiledPart(compiled: CompiledContext): string {
  const { tokens, redactions, budget } = compiled;
  return (
    `"systemPrompt":${JSON.stringify(compiled.systemPrompt)},"inputPrompt":${JSON.stringify(compiled.inputPrompt)},` +
    `"instructions":${JSON.stringify(compiled.instructions)},` +
    `"tokens":{"total":${JSON.stringify(tokens.total)},"byKind":${JSON.stringify(tokens.byKind)}},` +
    `"redactions":{"email":${JSON.stringify(redactions.email)},"phone":${JSON.stringify(redactions.phone)}},` +
    `"promptSha256":${JSON.stringify(compiled.promptSha256)},"inputSha256":${JSON.stringify(compiled.inputSha256)},` +
    `"blocks":${JSON.stringify(compiled.blocks, BLOCK_KEYS)},` +
    `"budget":{"limitChars":${JSON.stringify(budget.limitChars)},"usedChars":${JSON.stringify(budget.usedChars)},` +
    `"remainingChars":${JSON.stringify(budget.remainingChars)},` +
    `"omitted":{"memory":${JSON.stringify(budget.omitted.memory)},"briefing":${JSON.stringify(budget.omitted.briefing)}},` +
    `"blocks":${JSON.stringify(budget.blocks)}},` +
    `"cache":${JSON.stringify(compiled.cache, CACHE_KEYS)}`
  );
}

/** The persona-only members (`liveContext`, `topic`, `voice`, `tools`, `session`) that are present, each followed by a comma. */
function extraPart(extra: Record<string, unknown>): string {
  let json = extraJson.get(extra);
  if (json !== undefined) return json;
  json = '';
  const { liveContext, topic, voice, tools, session } = extra as {
    liveContext?: string;
    topic?: Record<string, unknown> | null;
    voice?: string;
    tools?: PersonaTool[];
    session?: RealtimeSession;
  };
  if (liveContext !== undefined) json += `"liveContext":${JSON.stringify(liveContext)},`;
  if (topic !== undefined) json += `"topic":${JSON.stringify(topic, TOPIC_KEYS)},`;
  if (voice !== undefined) json += `"voice":${JSON.stringify(voice)},`;
  // The session carries the same tools: each is written once and the text used twice.
  const toolsJson = tools === undefined ? undefined : toolListJson(tools);
  if (toolsJson !== undefined) json += `"tools":${toolsJson},`;
  if (session !== undefined) {
    json +=
      `"session":{"type":${JSON.stringify(session.type)},"instructions":${JSON.stringify(session.instructions)},` +
      `"audio":{"output":{"voice":${JSON.stringify(session.audio.output.voice)}}},` +
      `"tools":${session.tools === tools && toolsJson !== undefined ? toolsJson : toolListJson(session.tools)}},`;
  }
  extraJson.set(extra, json);
  return json;
}

function toolListJson(tools: readonly PersonaTool[]): string {
  const items = tools.map(
    (tool) =>
      `{"type":${JSON.stringify(tool.type)},"name":${JSON.stringify(tool.name)},` +
      `"description":${JSON.stringify(tool.description)},"parameters":${JSON.stringify(tool.parameters)}}`,
  );
  return `[${items.join(',')}]`;
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
    ...(delivery.absent !== undefined && delivery.absent.length > 0 ? { absent: delivery.absent.map((path) => ({ path })) } : {}),
    ...(delivery.listings !== undefined && delivery.listings.length > 0 ? { listings: delivery.listings } : {}),
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
