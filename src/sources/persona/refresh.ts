/**
 * A mid-call refresh's sources (SPEC §4, issue 24): the connect it compares with, found in
 * its run's trace, and the compile job that compiles the persona again with the connect's
 * options and answers with what changed in its live context since.
 */
import { sha256Hex } from '../../core/digest.js';
import { contextEvent, liveContextChanges, parseInputPrompt, refreshText } from '../../core/persona/refresh.js';
import { ANSWER_PROVIDERS, providerShape, type AnswerProvider } from '../../core/persona/voices.js';
import { noMemo, type Memo } from '../../core/memo.js';
import { ProblemError } from '../../errors.js';
import type { TraceEvent } from '../../../schemas/trace.js';
import { EngineSchema, TimeZoneSchema } from '../../../schemas/ids.js';
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
  /** The connect was given a `topicName` (recorded as a flag only, never its text). */
  topicName: boolean;
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
  const event = events.find((candidate) => candidate.route === `GET /context/${persona}` && candidate.outcome !== 'failed' && candidate.caller === caller);
  if (event === undefined) return undefined;
  if (event.verified !== true) {
    throw new ProblemError('CC_UNPROCESSABLE', `The connect in run ${event.runId} does not verify (its prompts or chain link do not hold); it cannot be refreshed. Connect again.`);
  }
  const recorded = event.request;
  const provider = ANSWER_PROVIDERS.find((name) => name === recorded['provider']) ?? 'openai';
  const timezone = TimeZoneSchema.safeParse(recorded['timezone']);
  const engine = EngineSchema.safeParse(recorded['engine']);
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
  };
}

/** What refreshes remember: each connect found, by caller, persona and run (a connect's event never changes once traced). */
export interface RefreshMemo {
  readonly connects: Memo<string, Connect>;
}

export const NO_REFRESH_MEMO: RefreshMemo = Object.freeze({ connects: noMemo<string, Connect>() });

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
    warnings.push('refresh-topic-name: the connect was given a topicName; give the same one to refresh, or its topic block differs by its name');
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
export function refreshJob(persona: CompileJob, connect: Connect, provider: AnswerProvider, warnings: readonly string[]): CompileJob {
  return {
    async read(brain) {
      const found = await persona.read(brain);
      return {
        warnings: warnings.length === 0 ? found.warnings : [...found.warnings, ...warnings],
        facts: found.facts,
        compile: () => refreshed(found.compile(), connect, provider),
      };
    },
  };
}

function refreshed(fresh: JobResult, connect: Connect, provider: AnswerProvider): JobResult {
  const { compiled } = fresh;
  const shape = providerShape(provider);
  const changes = liveContextChanges(parseInputPrompt(connect.inputPrompt), parseInputPrompt(compiled.inputPrompt));
  const clock = compiled.blocks.find((block) => block.kind === 'clock')?.content ?? '';
  const delta = refreshText(changes, clock) ?? '';
  const counts = changes.map(({ block, source, added, removed }) => ({ block, source, added: added.length, removed: removed.length }));
  const record: TraceRefresh = { provider, changes: counts, textSha256: delta === '' ? null : sha256Hex(delta), chars: delta.length };
  const etag = `"${sha256Hex(`${connect.inputSha256 ?? '-'}\n${compiled.inputSha256 ?? '-'}\n${shape}`).slice(0, 40)}.refresh"`;
  return {
    compiled,
    extra: { parentRunId: connect.runId, provider, text: delta, event: contextEvent(shape, delta), changes: counts },
    ...(fresh.realtime === undefined ? {} : { realtime: fresh.realtime }),
    record: { refresh: record },
    validator: { etag, unchanged: changes.length === 0 },
  };
}
