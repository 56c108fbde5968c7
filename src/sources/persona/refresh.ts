/**
 * A mid-call refresh's sources (issue 24): the connect it compares with, found in
 * its run's trace, and the compile job that compiles the persona again with the connect's
 * options and answers with what changed in its live context since.
 */
import { sha256Hex } from '../../core/digest.js';
import { contextEvent, liveContextChanges, parseInputPrompt, refreshText, type BlockChange } from '../../core/persona/refresh.js';
import { ANSWER_PROVIDERS, providerShape, type AnswerProvider, type Delivery } from '../../core/persona/providers.js';
import { area, noMemos, type MemosOf } from '../../core/area.js';
import { ProblemError } from '../../errors.js';
import type { TraceEvent } from '../../../schemas/trace.js';
import { EngineSchema, ModelSchema, TimeZoneSchema } from '../../../schemas/ids.js';
import type { TraceRefresh } from '../../../schemas/refresh.js';
import type { CompileJob, JobResult } from '../job.js';

/** A connect as its trace event recorded it: what a refresh compares with and compiles again. */
export interface Connect {
  runId: string;
  /** The delivered input prompt (the live context and topic, one JSON object per line); null when there was none. */
  inputPrompt: string | null;
  inputSha256: string | null;
  provider: AnswerProvider;
  /** The options the connect was compiled with, validated again (the trace is data, not a request). */
  request: { timezone?: string | undefined; topicId?: string | undefined; sanitize?: 'ascii' | undefined; engine?: string | undefined };
  /** The connect was given a `topicName` (recorded as a flag and a digest, never its text). */
  topicName: boolean;
  topicNameSha256: string | null;
  /** The realtime model the connect named (`?model=`), which chooses a refresh's delivery. */
  model: string | undefined;
}

const text = (value: unknown) => (typeof value === 'string' ? value : undefined);

/**
 * The connect of `persona` in a run's events: the first delivered (or 304) compile of
 * `GET /context/<persona>`, recorded under `caller`'s name, whose prompts were rebuilt and
 * verified. Undefined when the events hold none of `caller`'s (another caller's connect is
 * not this caller's to refresh, whatever it may read); a problem when the one found does
 * not verify, since a refresh would compare with text nobody vouches for.
 */
export function connectIn(events: readonly TraceEvent[], persona: string, caller: string | undefined): Connect | undefined {
  const event = events.find((candidate) => (candidate.route === `GET /context/${persona}` || isCatchUp(candidate, persona)) && candidate.outcome !== 'failed' && candidate.caller === caller);
  if (event === undefined) return undefined;
  if (event.verified !== true) {
    throw new ProblemError('CC_UNPROCESSABLE', `The connect in run ${event.runId} does not verify (its prompts or chain link do not hold); it cannot be refreshed. Connect again.`);
  }
  const recorded = event.request;
  const provider = ANSWER_PROVIDERS.find((name) => name === recorded['provider']) ?? 'openai';
  const timezone = TimeZoneSchema.safeParse(recorded['timezone']);
  const engine = EngineSchema.safeParse(recorded['engine']);
  const model = ModelSchema.safeParse(recorded['model']);
  return {
    runId: event.runId,
    inputPrompt: event.inputPrompt,
    inputSha256: event.inputSha256 ?? null,
    provider,
    request: {
      timezone: timezone.success ? timezone.data : undefined,
      // A slug is checked again where it is read (`isSlug`); an unusable one was recorded as null.
      topicId: text(recorded['topicId']),
      sanitize: recorded['sanitize'] === 'ascii' ? 'ascii' : undefined,
      engine: engine.success ? engine.data : undefined,
    },
    topicName: recorded['topicName'] === true,
    topicNameSha256: typeof recorded['topicNameSha256'] === 'string' ? recorded['topicNameSha256'] : null,
    model: model.success ? model.data : undefined,
  };
}

/**
 * A catch-up (`?baseline=`): the first refresh of a call that connected on a fallback, traced
 * as the first event of the call's own run. What it delivered is what the call has since,
 * so the refreshes after it compare with it, as with a connect.
 */
function isCatchUp(event: TraceEvent, persona: string): boolean {
  return event.route === `GET /context/${persona}/refresh` && event.parentRunId === undefined && typeof event.request['baseline'] === 'string';
}

/**
 * The connect a catch-up compares with: what the call was given on its fallback. `static`:
 * the persona's static session, which holds no live context and no topic; `stale`: the
 * connect the stale session came from. The options are those the call connected with, as
 * the client tells them.
 */
export function catchUpBaseline(runId: string, stale: Connect | null, options: { provider: AnswerProvider; model: string | undefined; timezone: string | undefined; topicId: string | undefined }): Connect {
  return {
    runId,
    inputPrompt: stale?.inputPrompt ?? null,
    inputSha256: stale?.inputSha256 ?? null,
    provider: options.provider,
    request: { timezone: options.timezone, topicId: options.topicId },
    topicName: false,
    topicNameSha256: null,
    model: options.model,
  };
}

/** What refreshes remember: each connect found, by caller, persona and run (a connect's event never changes once traced). */
export const REFRESH_AREAS = {
  connects: area<string, Connect>('sources.connects', 0.01),
};
export type RefreshMemo = MemosOf<typeof REFRESH_AREAS>;

export const NO_REFRESH_MEMO: RefreshMemo = noMemos(REFRESH_AREAS);

/** How many of a connect run's first events are looked through for its connect. */
export const CONNECT_SEARCH_EVENTS = 100;

/** A run's first events as the trace store reads them back (verified, and only those `visibleTo` may see). */
export type ReadRun = (runId: string, query: { limit: number; visibleTo: string | null }) => Promise<{ events: readonly TraceEvent[] } | null>;

/**
 * The connect of `persona` in run `runId` that `caller` may refresh (`connectIn`), read from
 * the trace once and then remembered: reading a run checks the hash chain of the trace file
 * holding it, whose cost grows with the file, and a call refreshes on every turn.
 */
export async function findConnect(readRun: ReadRun, runId: string, persona: string, scope: { caller: string | undefined; visibleTo: string | null }, memo: RefreshMemo = NO_REFRESH_MEMO): Promise<Connect | undefined> {
  const key = `${scope.caller ?? '-'}|${persona}|${runId}`;
  const known = memo.connects.get(key);
  if (known !== undefined) return known;
  const run = await readRun(runId, { limit: CONNECT_SEARCH_EVENTS, visibleTo: scope.visibleTo });
  const connect = run === null ? undefined : connectIn(run.events, persona, scope.caller);
  if (connect !== undefined) memo.connects.set(key, connect, 2 * (key.length + (connect.inputPrompt?.length ?? 0)) + 512);
  return connect;
}

/** Why a refresh may not compare like with like: said as warnings, never refused. */
export function refreshWarnings(connect: Connect, provider: AnswerProvider, topicName: string | undefined): string[] {
  const warnings: string[] = [];
  if (providerShape(provider) !== providerShape(connect.provider)) {
    warnings.push(`refresh-provider: the connect was answered for ${connect.provider}; this refresh's event is ${provider}'s`);
  }
  if (connect.topicName && topicName === undefined) {
    warnings.push("refresh-topic-name: the connect was given a topicName and this refresh none; the connect's topic block is kept as it was, and changes to the topic are not compared");
  } else if (topicName !== undefined && connect.topicNameSha256 !== null && sha256Hex(topicName) !== connect.topicNameSha256) {
    warnings.push("refresh-topic-name: this refresh's topicName is not the connect's; its topic block differs by the name");
  }
  return warnings;
}

/**
 * The refresh's job: `persona` (the persona's compile job with the connect's options, now)
 * read and compiled, then compared with the connect. The result carries the fresh compile
 * (traced as any delivery), the text and event of what changed, and its own validator: an
 * ETag over the connect's input, the fresh input and the event's form — so a refresh that
 * finds what the last one found is a 304 to a caller that sends that ETag — and `unchanged`
 * when nothing changed at all. The shared compile is wrapped, never changed.
 */
export function refreshJob(persona: CompileJob, connect: Connect, provider: AnswerProvider, delivery: Delivery, topicName: string | undefined, warnings: readonly string[]): CompileJob {
  // Without the connect's topicName the fresh topic block differs by the name alone: the connect's stands.
  const keepTopic = connect.topicName && topicName === undefined;
  return {
    async read(brain) {
      const found = await persona.read(brain);
      return {
        warnings: warnings.length === 0 ? found.warnings : [...found.warnings, ...warnings],
        resolved: found.resolved,
        compile: () => refreshed(found.compile(), connect, provider, delivery, keepTopic),
      };
    },
  };
}

/**
 * What a refresh delivers: the changes between the connect's input prompt and the fresh one,
 * said with the clock line of now (the empty text when nothing changed). `keepTopic`: the
 * connect was given a topicName and the refresh none, so the connect's topic block stands.
 * The one definition of the delivered text, used to deliver it and to rebuild it from the trace.
 */
export function refreshDelta(connectInput: string | null, freshInput: string | null, clock: string, keepTopic: boolean): { changes: BlockChange[]; text: string } {
  const connected = parseInputPrompt(connectInput);
  const now = parseInputPrompt(freshInput);
  const changes = liveContextChanges(connected, keepTopic ? [...now.filter((block) => block.kind !== 'topic'), ...connected.filter((block) => block.kind === 'topic')] : now);
  return { changes, text: refreshText(changes, clock) ?? '' };
}

function refreshed(fresh: JobResult, connect: Connect, provider: AnswerProvider, delivery: Delivery, keepTopic: boolean): JobResult {
  const { compiled } = fresh;
  const shape = providerShape(provider);
  const clock = compiled.blocks.find((block) => block.kind === 'clock')?.content ?? '';
  const { changes, text: delta } = refreshDelta(connect.inputPrompt, compiled.inputPrompt, clock, keepTopic);
  const counts = changes.map(({ block, source, added, removed }) => ({ block, source, added: added.length, removed: removed.length }));
  const record: TraceRefresh = { provider, delivery, changes: counts, textSha256: delta === '' ? null : sha256Hex(delta), chars: delta.length };
  const etag = `"${sha256Hex(`${connect.inputSha256 ?? '-'}\n${compiled.inputSha256 ?? '-'}\n${shape}\n${delivery}`).slice(0, 40)}.refresh"`;
  // A reconnect carries the whole fresh setup (its instructions hold the live context now); the others only the changed lines.
  const sent = delivery === 'reconnect' ? { event: null, setup: fresh.extra?.['setup'] } : { event: contextEvent(shape, delta) };
  return {
    compiled,
    extra: { parentRunId: connect.runId, provider, delivery, text: delta, changes: counts, ...sent },
    ...(fresh.realtime === undefined ? {} : { realtime: fresh.realtime }),
    record: { refresh: record },
    validator: { etag, unchanged: changes.length === 0 },
  };
}

/** A refresh's delivered text as the trace rebuilds it: the text when its sha256 is the recorded one, else why not. */
export type RebuiltRefreshText = { text: string } | { text: null; reason: string };

/**
 * The clock line a refresh event's text began with: its clock block's text under its label
 * line, cut from the rebuilt system prompt (trusted blocks are the system segments, in order)
 * and held to the block's content digest. Null when the event does not carry it.
 */
function tracedClock(event: TraceEvent): string | null {
  const blocks = event.blocks ?? [];
  const system = event.segments?.system ?? [];
  const trusted = blocks.filter((block) => block.authority === 'trusted-directive');
  const at = trusted.findIndex((block) => block.kind === 'clock');
  const segment = system[at];
  if (at < 0 || event.systemPrompt === null || trusted.length !== system.length || segment === undefined) return null;
  const labelled = event.systemPrompt.slice(segment.offset, segment.offset + segment.chars).replace(/^\n+/, '');
  const newline = labelled.indexOf('\n');
  const body = newline < 0 ? '' : labelled.slice(newline + 1);
  return sha256Hex(body) === trusted[at]!.sha256 ? body : null;
}

/**
 * What a delivered refresh sent, rebuilt from the trace as it was built (`refreshDelta`): the
 * connect's input prompt (its run's connect, as the refresh route finds it; a catch-up's static
 * baseline has none, a stale one is its run's connect), the refresh's own fresh input prompt
 * and clock line — and shown only when its sha256 is the `textSha256` the event recorded.
 */
export async function rebuildRefreshText(readRun: ReadRun, event: TraceEvent, visibleTo: string | null): Promise<RebuiltRefreshText> {
  const recorded = event.refresh?.textSha256;
  if (!recorded) return { text: null, reason: 'nothing was sent' };
  if (event.verified !== true) return { text: null, reason: 'this event’s own prompts do not verify' };
  const clock = tracedClock(event);
  if (clock === null) return { text: null, reason: 'its clock line is not in the trace' };
  const persona = event.subject.id;
  const baseline = event.request['baseline'];
  let connect: Connect | undefined;
  try {
    if (event.parentRunId !== undefined) connect = await findConnect(readRun, event.parentRunId, persona, { caller: event.caller, visibleTo });
    else if (baseline === 'stale' && typeof event.request['baselineRunId'] === 'string') connect = await findConnect(readRun, event.request['baselineRunId'], persona, { caller: event.caller, visibleTo });
    // A catch-up from a static session (or a stale one whose connect was gone) compared with no live context.
    if (connect === undefined && event.parentRunId === undefined && (baseline === 'static' || baseline === 'stale')) connect = catchUpBaseline(event.runId, null, { provider: 'openai', model: undefined, timezone: undefined, topicId: undefined });
  } catch (error) {
    return { text: null, reason: error instanceof ProblemError ? error.message : 'its connect could not be read' };
  }
  if (connect === undefined) return { text: null, reason: `its connect (run ${event.parentRunId ?? '?'}) is not in the trace` };
  const keepTopic = connect.topicName && event.request['topicName'] !== true;
  const { text } = refreshDelta(connect.inputPrompt, event.inputPrompt, clock, keepTopic);
  return sha256Hex(text) === recorded ? { text } : { text: null, reason: 'the text rebuilt from the trace does not match its recorded sha256' };
}

/** Each delivered refresh of `events` with the text it sent (`refreshText`), rebuilt from the trace; a connect run is read once. */
export async function attachRefreshTexts(readRun: ReadRun, events: readonly TraceEvent[], visibleTo: string | null): Promise<void> {
  const runs = new Map<string, ReturnType<ReadRun>>();
  const once: ReadRun = (runId, query) => {
    let run = runs.get(runId);
    if (run === undefined) runs.set(runId, (run = readRun(runId, query)));
    return run;
  };
  for (const event of events) if (event.refresh?.textSha256) event.refreshText = await rebuildRefreshText(once, event, visibleTo);
}
