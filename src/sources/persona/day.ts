/**
 * A persona's day: everything read and derived for one local day, kept with the brain
 * session's record of its reads (`throughReplay`) so a later request for the same persona
 * and options replays the record and applies only its own minute; and the compiles of its
 * latest minutes, shared between the requests of a minute.
 */
import { createCompiler, type Compiler } from '../../core/compile.js';
import type { Persona } from '../../core/persona/personas.js';
import { geminiSetupWith } from '../../core/persona/gemini-setup.js';
import { asciiInstructions, realtimeSession } from '../../core/persona/session.js';
import { providerShape, type AnswerProvider, type RealtimeProvider } from '../../core/persona/providers.js';
import { addCounts, type RedactionCounts } from '../../core/pii.js';
import { clockLine, localDate, localTime, type TimeMemo } from '../../core/time.js';
import { type ResolvedTimeZone } from '../../core/zones.js';
import type { BrainSession } from '../../io/brain.js';
import { area, noMemos, type MemosOf } from '../../core/area.js';
import { shared } from '../job.js';
import { policyKey, REPLAY_AREAS, throughReplay, type ReplayMemo, type Replayable } from '../replay.js';
import { personaOrNotFound, type PersonaRequest } from './request.js';
import type { PersonaCompiled, PersonaOptions, PersonaSources } from './sources.js';
import { readDay, type DayRead } from './gather.js';
import { NO_READING_MEMO, type BuiltLiveContext, type ReadingMemo } from './reading.js';
import { NO_TOPIC_MEMO, type TopicMemo } from './topic.js';

/**
 * What a persona's day remembers, beside its reading, its topic and a policy as part of a key
 * (`ReplayMemo`, by the policy object: a route's is fixed): the day itself with the record of
 * its reads (by `dayKey`), and the compiles of its latest minutes (by `PersonaSources.compileKey`).
 */
export const DAY_AREAS = {
  personaDays: area<string, Replayable<PersonaDay>>('sources.personaDays', 0.01),
  /** The largest of the sources': compiled persona results, for their latest minutes (what delivery keeps of each, in `app.delivered`, lives as long as the result). */
  personaMinutes: area<string, PersonaMinutes>('sources.personaMinutes', 0.18),
};
export type DayMemo = ReadingMemo & TopicMemo & ReplayMemo & MemosOf<typeof DAY_AREAS>;

export const NO_DAY_MEMO: DayMemo = Object.freeze({ ...NO_READING_MEMO, ...NO_TOPIC_MEMO, ...noMemos(REPLAY_AREAS), ...noMemos(DAY_AREAS) });

/**
 * Reads a persona's sources and builds its `CompileInput`: identity, character (or the
 * operator's override), tools and hard rules (trusted, worker-stable); the voice runtime
 * scope; the clock line in the operator's zone (volatile, last of the system prompt); the
 * live context and the topic (advisory input). Never throws for a bad brain; each file is
 * read at most once; `people/` and `companies/` are never touched.
 *
 * What a persona's sources are for one local day is remembered with the brain session's
 * record of what it read: a later request for the same persona and options replays that
 * record (every file revalidated as a read would, with stats issued after the request
 * began) and, if it holds, applies only its own minute — so it sees every change completed
 * before it asked, as a full read would, for a fraction of the work.
 */
export async function readPersonaSources(brain: BrainSession, request: PersonaRequest, options: PersonaOptions, memo: DayMemo = NO_DAY_MEMO): Promise<PersonaSources> {
  const persona = personaOrNotFound(request.persona);
  const { value: day } = await throughReplay(
    brain,
    memo.personaDays,
    dayKey(persona, request, options, memo),
    { fits: (kept) => localDate(request.now, kept.timeZone.timeZone, memo.time) === kept.today, bytes: () => 4096, freeze: memo.freezeShared },
    async () => dayOf(persona, await readDay(brain, persona, request, options, memo), memo.time),
  );
  return day.forMinute(request.now, request.provider ?? 'openai');
}

/** A persona's sources for one local day: everything read and derived, and the minute applied per request. */
export interface PersonaDay {
  timeZone: ResolvedTimeZone;
  today: string;
  forMinute(now: Date, provider: AnswerProvider): PersonaSources;
}

/** Names a request's persona and options (everything but the instant), for the day kept with its reads. */
function dayKey(persona: Persona, request: PersonaRequest, options: PersonaOptions, memo: DayMemo): string {
  const topicId = request.topicId === undefined ? '-' : JSON.stringify(request.topicId);
  const flags = `${options.allowWriteTools === true ? 1 : 0}${options.crossLingual === true ? 1 : 0}${request.sanitize === 'ascii' ? 1 : 0}`;
  return `day|${persona.key}|${flags}|${request.timezone ?? '-'}|${options.defaultTimeZone}|${topicId}|${request.topicName === undefined ? '-' : JSON.stringify(request.topicName)}|${request.engine ?? '-'}|${policyKey(options.policy, memo)}`;
}

/** A day read, and the sources of its minutes: the live context at the minute, in the provider's shape. */
function dayOf(persona: Persona, read: DayRead, time: TimeMemo): PersonaDay {
  const { zone, fixed, prepared, beforeLive, afterLive, keyBeforeLive, keyAfterLive } = read;
  const { key, name, description } = prepared.rendered;
  const liveSource = `builtin:${persona.key}/live-context`;
  // One list per live context (mars has one a day; venus one per set of events over) and shape, handed out again unchanged.
  const warningsFor = { openai: new WeakMap<BuiltLiveContext, readonly string[]>(), gemini: new WeakMap<BuiltLiveContext, readonly string[]>() };
  const warningsOf = (live: BuiltLiveContext, shape: RealtimeProvider): readonly string[] => {
    let list = warningsFor[shape].get(live);
    // What Gemini's declarations of the tools lost is said with the Gemini answer alone.
    const declared = shape === 'gemini' ? prepared.gemini().warnings : [];
    if (list === undefined) warningsFor[shape].set(live, (list = Object.freeze([...beforeLive, ...live.warnings, ...afterLive, ...declared])));
    return list;
  };
  // Per live context too: its redactions with the tool descriptions' (the compiler cannot see them again).
  const redactionsFor = new WeakMap<BuiltLiveContext, RedactionCounts>();
  const redactionsOf = (live: BuiltLiveContext): RedactionCounts =>
    redactionsFor.get(live) ?? redactionsFor.set(live, addCounts({ ...live.redactions }, prepared.rendered.redactions)).get(live)!;
  return {
    timeZone: zone,
    today: read.today,
    forMinute(now: Date, provider: AnswerProvider): PersonaSources {
      const live = 'day' in read.live ? read.live.day : read.live.at(localTime(now, zone.timeZone, time));
      const shape = providerShape(provider);
      const voice = prepared.rendered.voices[shape];
      return {
        input: { ...fixed, provider: shape, clock: { now, timeZone: zone.timeZone }, liveContext: { source: liveSource, text: live.text, brainDerived: true } },
        persona: { key, name, voice, description },
        provider,
        voice,
        tools: prepared.sessionTools,
        toolsSha256: prepared.sessionToolsSha256,
        ...(shape === 'gemini' ? { geminiTools: prepared.gemini().tools } : {}),
        timeZone: zone,
        liveContextRedactions: redactionsOf(live),
        topic: read.topic,
        warnings: warningsOf(live, shape),
        // The clock block only shows the minute, so calls within a minute share one compile.
        compileKey: `${keyBeforeLive}${live.key}${keyAfterLive}|${provider}`,
        clockKey: clockLine(now, zone.timeZone, time),
      };
    },
  };
}

/**
 * The compiles kept for one persona, files and options: the latest minutes only. A voice
 * session connects at its own minute, so an older minute is rarely asked for again, and a
 * result kept longer only ages into the old generation of the heap before it is dropped.
 */
export interface PersonaMinutes {
  minutes: Array<{ clock: string; result: PersonaCompiled }>;
}

/** Minutes kept per persona, files and options: the current one and the one before (a caller straddling the boundary). */
const KEPT_MINUTES = 2;

/**
 * Compiles persona sources; the redactions count the live context's, the extras describe the
 * delivered blocks. Sources with the same `compileKey` and `clockKey` get the same (shared,
 * immutable) result while it is one of the latest two minutes kept for that key.
 */
export function compilePersona(sources: PersonaSources, compiler: Compiler = createCompiler(), memo: DayMemo = NO_DAY_MEMO): PersonaCompiled {
  const { compileKey, clockKey } = sources;
  if (compileKey === undefined || clockKey === undefined) return compilePersonaAfresh(sources, compiler);
  const kept = memo.personaMinutes.get(compileKey);
  const found = kept?.minutes.find((minute) => minute.clock === clockKey);
  if (found !== undefined) return found.result;
  const result: PersonaCompiled = shared(compilePersonaAfresh(sources, compiler), memo.freezeShared);
  const minutes = [{ clock: clockKey, result }, ...(kept?.minutes ?? []).slice(0, KEPT_MINUTES - 1)];
  // The prompts (three times: system, input and instructions, and the session's copy), the block contents and segments, per minute kept.
  const bytes = minutes.reduce((sum, minute) => sum + 8 * minute.result.compiled.instructions.length + 8 * 1024, 2 * compileKey.length);
  memo.personaMinutes.set(compileKey, { minutes }, bytes);
  return result;
}

/** A compile of `sources`, not shared. */
function compilePersonaAfresh(sources: PersonaSources, compiler: Compiler): PersonaCompiled {
  const compiled = compiler.compile(sources.input);
  const live = sources.liveContextRedactions;
  const liveContext = compiled.blocks.find((block) => block.kind === 'live-context')?.content ?? '';
  const result: PersonaCompiled = {
    // The compile itself when the live context needed no redaction: nothing to add, no copy to make.
    compiled: live.email === 0 && live.phone === 0 ? compiled : { ...compiled, redactions: addCounts({ ...compiled.redactions }, live) },
    extra: {
      liveContext,
      topic: sources.topic === null ? null : { ...sources.topic, chars: compiled.blocks.find((block) => block.kind === 'topic')?.chars ?? 0 },
      provider: sources.provider,
      voice: sources.voice,
      // Gemini's instructions are the session's: the delivered instructions in realtime-safe ASCII.
      ...(sources.geminiTools === undefined
        ? { session: realtimeSession(compiled.instructions, sources.voice, sources.tools) }
        : { setup: geminiSetupWith(asciiInstructions(compiled.instructions), sources.voice, sources.geminiTools) }),
    },
    realtime: { voice: sources.voice, tools: sources.tools, toolsSha256: sources.toolsSha256 },
  };
  return result;
}
