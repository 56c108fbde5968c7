/**
 * The one way a compile route hands its outcome to the caller. A route maps HTTP to a
 * compile job (`src/sources/job.ts`); `deliverJob` runs it through a per-request brain
 * session and merges what it returns (nothing is changed after the fact), and success and
 * failure both pass through `deliver`, so whatever must happen to every delivery (the trace
 * event, metrics, the run id header) happens in one place.
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sha256Hex } from '../core/digest.js';
import { hudFor, type Hud, type SnapshotFile } from '../core/hud.js';
import type { CompiledContext, Subject } from '../core/types.js';
import { ProblemError } from '../errors.js';
import type { Brain, ListingRecord, SessionRecord, SourceRecord } from '../io/brain.js';
import { compiledEventFields, type TraceEventInput } from '../io/trace/index.js';
import type { CompileJob, EtagKey, JobRead, JobResult } from '../sources/job.js';
import type { AnswerEncoder } from './answer.js';
import { runScope } from './auth.js';
import { asProblemError, toProblem } from './problem.js';
import type { CompileFacts } from './telemetry.js';

export type DeliveryFormat = 'json' | 'text';

/** The request's one reading of the wall clock, and the monotonic time it was taken at: later instants derive from both. */
export interface RequestClock {
  /** Epoch ms when the request began to be handled. */
  readonly startedAt: number;
  /** `performance.now()` at the same moment. */
  readonly began: number;
}

export function readClock(): RequestClock {
  return { startedAt: Date.now(), began: performance.now() };
}

/** What a compile route knows before reading anything. */
export interface DeliveryRequest {
  /** Route pattern, e.g. `POST /compile` or `GET /context/mars`. */
  route: string;
  runId: string;
  /** The service made `runId` up for this request: its run holds nothing yet, so the store checks no owner or count. */
  newRun: boolean;
  /** A mid-call refresh: the connect's run it compares with, which its events name. */
  parentRunId?: string;
  subject: Subject;
  surface: string;
  /** Identifiers of the request (worker, channelId, topicId, phase, ...): never text, prompts or tokens. */
  identifiers: Readonly<Record<string, string | number | boolean | null>>;
  /** Options that shaped the prompt (timezone, now, sanitize, item counts), recorded in the trace: never text or tokens. */
  options: Readonly<Record<string, unknown>>;
  format: DeliveryFormat;
  /** Whether the JSON answer carries `hud` (`?hud=1`); the trace records it either way. */
  hud?: boolean;
  clock: RequestClock;
  /** The route's JSON writer (`createAnswerEncoder` over its response schema). */
  answer: AnswerEncoder;
  /** Members of the JSON answer the request decides, not the compiled result (a persona's refresh `delivery`, chosen by its model). */
  answerMembers?: Readonly<Record<string, unknown>>;
}

/** A delivery, merged from the request, what its job read, and its outcome. */
interface DeliveryBase extends DeliveryRequest {
  /** Brain files read for this compile, with their digests. */
  sources: readonly SourceRecord[];
  /** Brain paths looked for and found missing, and the directory listings relied on (trace only). */
  absent: readonly string[];
  listings: readonly ListingRecord[];
  /** The files read, as the HUD's snapshot describes them. */
  loaded: readonly SnapshotFile[];
  /** The record of reads the session replayed (a persona's day), which keeps the HUD of them for every delivery of the day. */
  replayed?: SessionRecord | undefined;
  /** Warnings from reading sources (the compile adds its own). */
  warnings: readonly string[];
  timing: {
    /** Time spent reading sources, ms. */
    readMs: number;
    /** Time spent in `compile()`, ms. */
    compileMs: number;
  };
}

export interface CompiledDelivery extends DeliveryBase {
  result: JobResult;
}

export interface FailedDelivery extends DeliveryBase {
  error: unknown;
}

export type Delivery = CompiledDelivery | FailedDelivery;

/**
 * The one path of every compile route: run the job's read through a per-request brain
 * session (so the trace lists every file read), compile, and `deliver` the outcome — a
 * thrown problem included — with read and compile timings and the job's warnings and facts
 * merged in.
 */
export async function deliverJob(request: FastifyRequest, reply: FastifyReply, delivery: DeliveryRequest, job: CompileJob): Promise<FastifyReply> {
  const brain = request.server.brain.session();
  const began = performance.now();
  let found: JobRead | undefined;
  let readMs = 0;
  let compileMs = 0;
  let outcome: { result: JobResult } | { error: unknown };
  try {
    found = await job.read(brain);
    readMs = performance.now() - began;
    outcome = { result: found.compile() };
    compileMs = performance.now() - began - readMs;
  } catch (error) {
    outcome = { error };
  }
  const { metrics } = request.server;
  if (found !== undefined) metrics.readDuration.observe({ route: delivery.route }, readMs / 1000);
  if ('result' in outcome) metrics.compileDuration.observe({ route: delivery.route }, compileMs / 1000);
  return deliver(request, reply, {
    ...delivery,
    options: found === undefined ? delivery.options : { ...delivery.options, ...found.facts },
    warnings: found?.warnings ?? [],
    sources: brain.sources(),
    absent: brain.absent(),
    listings: brain.listings(),
    loaded: brain.loaded(),
    replayed: brain.replayed(),
    timing: { readMs, compileMs },
    ...outcome,
  });
}

/** Whether a route's `?hud=` asks for the HUD in the answer. */
export function wantsHud(flag: string | undefined): boolean {
  return flag === '1' || flag === 'true';
}

/** The run id the caller chose (already validated by the route schema), or a new one the service made up. */
export function runIdFor(given: string | undefined): { runId: string; newRun: boolean } {
  return given === undefined ? { runId: randomUUID(), newRun: true } : { runId: given, newRun: false };
}

function etagKey(delivery: DeliveryRequest): EtagKey {
  return delivery.format === 'text' ? 'text' : delivery.hud === true ? 'json+hud' : 'json';
}

/**
 * Strong validator of one representation of a compiled result (RFC 9110 §8.8.3). Text is
 * the instructions alone, so its ETag covers the prompts. JSON also covers what the caller
 * acts on that the prompts do not fix: the cache plan (its route key carries `engine`), the
 * budget, the voice and tools, the route's own members (topic, recall, receipts) and, with
 * `?hud=1`, the HUD. Members that describe the request rather than the prompt (runId,
 * sources, warnings) are left out, so an unchanged prompt still answers 304.
 */
export function etagFor(result: Pick<JobResult, 'compiled' | 'extra' | 'realtime'>, format: DeliveryFormat, hud: Hud | null = null): string {
  const { compiled } = result;
  const prompts = `${compiled.promptSha256}\n${compiled.inputSha256 ?? '-'}`;
  if (format === 'text') return `"${sha256Hex(prompts).slice(0, 40)}.txt"`;
  // The live context and the session or setup are the prompts again (with the voice and tools, covered by `realtime`; the provider stays a member).
  const { liveContext: _liveContext, session: _session, setup: _setup, voice: _voice, tools: _tools, ...members } = result.extra ?? {};
  const covered = JSON.stringify([prompts, compiled.cache, compiled.budget, result.realtime?.voice ?? null, result.realtime?.toolsSha256 ?? null, members, hud]);
  return `"${sha256Hex(covered).slice(0, 40)}${hud === null ? '' : '.hud'}"`;
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
 * `If-None-Match: *` on a method other than GET or HEAD: "only if no current representation
 * exists", which a compile always has, so RFC 9110 §13.1.2 calls for 412 Precondition Failed
 * without performing the method — nothing is compiled, traced or delivered.
 */
export function ifNoneMatchAny(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  return [header].flat().join(',').split(',').some((candidate) => candidate.trim() === '*');
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
  const { metrics, traces } = request.server;
  if (!('result' in delivery)) {
    const problem = asProblemError(delivery.error);
    const { status, detail } = toProblem(problem, request);
    const facts = (reply.compileFacts = compileFacts(delivery, null, delivery.warnings.length, problem.code));
    const tracing = performance.now();
    try {
      await traces.append({ ...eventBase(request, delivery, status), outcome: 'failed', error: { code: problem.code, status, detail } }, { newRun: delivery.newRun });
    } catch (traceError) {
      const refused = notTraced(request, delivery.route, traceError, `The compile failed (${problem.code}, ${status}) and was not traced.`);
      facts.code = refused.code;
      throw refused;
    }
    facts.traceMs = performance.now() - tracing;
    metrics.compileFailures.inc({ route: delivery.route, code: problem.code });
    throw problem;
  }

  const { result } = delivery;
  const { compiled, derived } = result;
  const { warnings, hud, etag } = described(delivery);
  const notModified = result.validator?.unchanged === true || ifNoneMatchHits(request.headers['if-none-match'], etag);
  const facts = (reply.compileFacts = compileFacts(delivery, compiled, warnings.length, null));
  const tracing = performance.now();
  try {
    await traces.append({
      ...eventBase(request, delivery, notModified ? 304 : 200),
      outcome: notModified ? 'not-modified' : 'delivered',
      ...compiledEventFields(compiled),
      warnings: [...warnings],
      // The same tools object on every call of a persona: the store keeps its definitions once.
      ...(result.realtime === undefined ? {} : { realtime: result.realtime }),
      hud,
      ...(result.record?.recall ? { recall: result.record.recall } : {}),
      ...(result.record?.receipts ? { receipts: result.record.receipts } : {}),
      ...(result.record?.refresh ? { refresh: result.record.refresh } : {}),
    }, { newRun: delivery.newRun, result: derived === undefined ? undefined : result });
  } catch (traceError) {
    const refused = notTraced(request, delivery.route, traceError, 'No prompt was delivered.');
    facts.code = refused.code;
    throw refused;
  }
  const traceMs = performance.now() - tracing;
  facts.traceMs = traceMs;
  const { redactions } = compiled;
  if (redactions.email > 0) metrics.redactions.inc({ kind: 'email' }, redactions.email);
  if (redactions.phone > 0) metrics.redactions.inc({ kind: 'phone' }, redactions.phone);
  const { readMs, compileMs } = delivery.timing;
  reply
    .header('etag', etag)
    .header('cache-control', 'private, no-cache')
    .header('server-timing', `read;dur=${readMs.toFixed(2)}, compile;dur=${compileMs.toFixed(2)}, trace;dur=${traceMs.toFixed(2)}`);
  if (notModified) return reply.code(304).send();
  if (delivery.format === 'text') return reply.type('text/plain; charset=utf-8').send(compiled.instructions);
  // A string or Buffer body is sent as it is: the route's response schema describes it, its encoder wrote it.
  return reply.type('application/json; charset=utf-8').send(answerBody(delivery, warnings, hud));
}

/**
 * The warnings, HUD and ETag of a compiled delivery. A shared result keeps what is derived
 * from it alone (HUD, ETags, answer bytes, trace records); its day keeps the HUD of its reads.
 */
function described(delivery: CompiledDelivery): { warnings: readonly string[]; hud: Hud; etag: string } {
  const { result } = delivery;
  const { compiled, derived } = result;
  const warnings = delivery.warnings.length === 0 ? compiled.warnings : [...delivery.warnings, ...compiled.warnings];
  const day = delivery.replayed?.derived;
  const kept = hudFor(derived?.hud ?? day?.hud, { loaded: delivery.loaded, missing: delivery.absent, blocks: compiled.blocks, budget: compiled.budget });
  const { hud } = kept;
  const key = etagKey(delivery);
  // The ETag of the JSON with the HUD holds while the HUD it covers does.
  if (derived !== undefined && derived.hud !== kept) delete derived.etags['json+hud'];
  const etag = result.validator?.etag ?? derived?.etags[key] ?? etagFor(result, delivery.format, key === 'json+hud' ? hud : null);
  if (derived !== undefined) {
    derived.etags[key] = etag;
    derived.hud = kept;
  }
  if (day !== undefined) day.hud = kept;
  return { warnings, hud, etag };
}

/** The JSON answer of a compiled delivery, with a shared result's own part written once and kept from its second answer on. */
function answerBody(delivery: CompiledDelivery, warnings: readonly string[], hud: Hud): string | Buffer {
  const { result } = delivery;
  const { compiled, derived } = result;
  const perRequest = {
    runId: delivery.runId,
    ...(delivery.subject.kind === 'persona' ? { persona: delivery.subject.id } : { worker: delivery.subject.id }),
    sources: delivery.sources,
    warnings,
    surface: delivery.surface,
    phase: delivery.identifiers['phase'],
    ...delivery.answerMembers,
    ...(delivery.hud === true ? { hud } : {}),
  };
  const parts = derived === undefined ? undefined : (derived.answer ?? delivery.answer.resultParts(resultMembers(result), compiled));
  // Kept from the result's second answer on: parts kept from every first answer would outlive the young generation for nothing.
  if (derived !== undefined && derived.answer === undefined) {
    if (derived.answered === true) derived.answer = parts;
    derived.answered = true;
  }
  return delivery.answer.body(perRequest, () => resultMembers(result), parts);
}

/**
 * Everything a delivery of `job` builds but the delivery: read through a brain session,
 * compiled, described (warnings, HUD, ETag) and its JSON answer written — no trace event,
 * no metric, no reply. The warm-up's way to build what a first request would. Resolves
 * true when the session read the brain afresh (nothing it kept was replayed).
 */
export async function rehearse(brain: Brain, delivery: Pick<DeliveryRequest, 'route' | 'subject' | 'surface' | 'identifiers' | 'answer' | 'answerMembers'>, job: CompileJob): Promise<boolean> {
  const session = brain.session();
  const found = await job.read(session);
  const result = found.compile();
  const rehearsed: CompiledDelivery = {
    ...delivery,
    runId: 'warm-up',
    newRun: true,
    options: found.facts,
    format: 'json',
    clock: readClock(),
    sources: session.sources(),
    absent: session.absent(),
    listings: session.listings(),
    loaded: session.loaded(),
    replayed: session.replayed(),
    warnings: found.warnings,
    timing: { readMs: 0, compileMs: 0 },
    result,
  };
  const { warnings, hud } = described(rehearsed);
  answerBody(rehearsed, warnings, hud);
  return rehearsed.replayed === undefined;
}

/** The members of a response that come from the compiled result: the compile itself and the route's extras. */
function resultMembers(result: JobResult): Record<string, unknown> {
  return result.extra === undefined ? { ...result.compiled } : { ...result.compiled, ...result.extra };
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

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}

/** The 503 for a delivery whose trace event could not be made durable; nothing of the prompt goes with it. */
function notTraced(request: FastifyRequest, route: string, traceError: unknown, what: string): ProblemError {
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
