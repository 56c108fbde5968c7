/**
 * Reading a persona's day: every file the day needs, asked for at once (the operator's zone,
 * override, tools and settings; the topic; mars's SOUL.md and memory/, venus's tasks,
 * calendar, inbox and meetings), and what the day's minutes are compiled from (`DayRead`).
 * Runs once per day and options, or when a file changed; a kept day's minutes are `day.ts`.
 */
import type { Persona } from '../../core/persona/personas.js';
import { TOOLS_FILE } from '../../core/persona/tools.js';
import { PERSONA_SETTINGS_FILE } from '../../core/persona/providers.js';
import { TOPIC_NAME_SOURCE, topicNameOnlyLine } from '../../core/persona/call-link.js';
import { DEFAULT_TOPIC_CHARS } from '../../core/signals/topic.js';
import { toAscii } from '../../core/text.js';
import { localDate } from '../../core/time.js';
import { type ResolvedTimeZone } from '../../core/zones.js';
import type { CompileInput } from '../../core/types.js';
import type { BrainSession } from '../../io/brain.js';
import { HEARTBEAT_PATH, readHeartbeatTimezone } from '../timezone.js';
import { policyKey, type ReplayMemo } from '../replay.js';
import { usableTopicId, usableZone, zoneWarning, type PersonaRequest } from './request.js';
import { PERSONA_READS, type PersonaOptions, type TopicSummary } from './sources.js';
import { marsLiveContext, preparePersona, venusLiveContext, Warnings, type BuiltLiveContext, type PreparedPersona, type ReadingMemo, type VenusAt } from './reading.js';
import { readTopic, TOPIC_WARNING, type ReadTopic, type TopicMemo } from './topic.js';

export type GatherMemo = ReadingMemo & TopicMemo & Pick<ReplayMemo, 'policyKeys'>;

/** What a persona's minutes of one local day are compiled from. */
export interface DayRead {
  zone: ResolvedTimeZone;
  today: string;
  /** The live context: mars has one a day; venus one per set of events over, by the local time (`VenusAt`). */
  live: { day: BuiltLiveContext } | { at: VenusAt };
  /** The compile input but the provider, clock and live context. */
  fixed: Omit<CompileInput, 'provider' | 'clock' | 'liveContext'>;
  prepared: PreparedPersona;
  topic: TopicSummary | null;
  /** The warnings said before the live context's, and after them. */
  beforeLive: readonly string[];
  afterLive: readonly string[];
  /** The compile key before and after the live context's key. */
  keyBeforeLive: string;
  keyAfterLive: string;
}

export async function readDay(brain: BrainSession, persona: Persona, request: PersonaRequest, options: PersonaOptions, memo: GatherMemo): Promise<DayRead> {
  const now = request.now;
  const ascii = request.sanitize === 'ascii';
  const warnings = new Warnings();

  // Everything that does not depend on the date starts at once.
  // An unusable zone fails open: the operator's zone, and a warning naming what was given.
  const requested = usableZone(request.timezone, memo.time);
  const zoneRead = readHeartbeatTimezone(brain, { requested, defaultTimeZone: options.defaultTimeZone }, memo);
  const overrideRead = brain.read(`personas/${persona.key}.md`, PERSONA_READS.override);
  const toolsRead = brain.read(TOOLS_FILE, PERSONA_READS.toolsFile);
  const settingsRead = brain.read(PERSONA_SETTINGS_FILE, PERSONA_READS.settingsFile);
  // An unusable id reads nothing: the persona connects with its generic context.
  const topicId = usableTopicId(request.topicId);
  const topicRead = topicId === undefined ? undefined : brain.read(`topics/${topicId}.md`, PERSONA_READS.topic);
  const mars = persona.key === 'mars' ? { soul: brain.read('SOUL.md', PERSONA_READS.soul), memory: brain.list('memory') } : undefined;
  const venus =
    persona.key === 'venus'
      ? {
          tasks: brain.read('tasks/open.md', PERSONA_READS.tasks),
          calendar: brain.read('calendar/today.md', PERSONA_READS.calendar),
          inbox: brain.read('messages/inbox.md', PERSONA_READS.inbox),
          meetings: brain.list('meetings'),
        }
      : undefined;
  const [zone, override, tools, settings] = await Promise.all([zoneRead, overrideRead, toolsRead, settingsRead]);
  // An unreadable root is said once, whichever file found it first.
  for (const warning of zone.unread === undefined ? zone.warnings : zone.warnings.slice(0, -1)) warnings.add(warning);
  if (zone.unread?.code === 'root-unreadable') warnings.unreadable(HEARTBEAT_PATH, 'error', zone.unread);
  else if (zone.unread !== undefined) warnings.add(zone.warnings.at(-1)!);
  if (request.timezone !== undefined && requested === undefined) warnings.add(zoneWarning(request.timezone, zone));

  const prepared = preparePersona(persona, { override, tools, settings }, ascii, options, memo);
  for (const read of [override, tools, settings]) if (read.status !== 'ok' && read.status !== 'missing') warnings.unreadable(read.path, read.status, read.reason);
  for (const warning of prepared.warnings) warnings.add(warning);

  const clock = { now, timeZone: zone.timeZone, today: localDate(now, zone.timeZone, memo.time) };
  const marsLive = mars ? await marsLiveContext(brain, mars, clock, ascii, warnings, memo) : undefined;
  const venusLiveAt = venus ? await venusLiveContext(brain, venus, clock, ascii, warnings, memo) : undefined;
  // The live context's own warnings go here, once the minute is known.
  const beforeLive = [...warnings.list];
  warnings.list.length = 0;

  let topic: ReadTopic | undefined;
  if (topicRead !== undefined) {
    topic = await readTopic(topicRead, topicId!, request.topicName, ascii, DEFAULT_TOPIC_CHARS, warnings, memo);
    if (topic.unusable !== undefined) warnings.add(`${topic.unusable.code}: ${topic.unusable.detail}; compiled without a topic`);
  } else if (request.topicId !== undefined) {
    const why = typeof request.topicId === 'string' ? 'is not a slug ([a-z0-9] then [a-z0-9-], at most 128 characters)' : 'was given more than once';
    warnings.add(`${TOPIC_WARNING.unsafe}: topicId ${why}; nothing was read and the persona connected without a topic`);
  }
  const afterLive = [...warnings.list];
  // A call link's topic name is said even without notes to load: one sanitised line.
  const nameOnly = topic?.source === undefined ? topicNameOnlyLine(request.topicName) : undefined;
  const topicSource = topic?.source ?? (nameOnly === undefined ? undefined : { source: TOPIC_NAME_SOURCE, text: ascii ? toAscii(nameOnly) : nameOnly, brainDerived: true });
  const topicKey = `${topic === undefined ? '-' : `${topic.summary.topicId}:${topic.prepared === undefined ? '-' : topic.prepared.key}`}${nameOnly === undefined ? '' : `|${nameOnly}`}`;
  const keyBeforeLive = `${policyKey(options.policy, memo)}|${prepared.key}|`;
  const keyAfterLive = `|${topicKey}|${zone.timeZone}|${request.engine ?? '-'}`;
  const fixed = {
    subject: { kind: 'persona', id: persona.key },
    surface: 'voice',
    phase: 'start',
    policy: options.policy,
    identity: prepared.identity,
    persona: prepared.persona,
    tools: prepared.tools,
    hardRules: prepared.hardRules,
    ...(topicSource ? { topic: topicSource } : {}),
    ...(request.engine !== undefined ? { engine: request.engine } : {}),
    // The session's tools go with the instructions; providers cache them together (counted in the cache plan).
    sessionTools: prepared.sessionTools,
  } as const;
  return {
    zone,
    today: clock.today,
    live: marsLive !== undefined ? { day: marsLive } : { at: venusLiveAt! },
    fixed,
    prepared,
    topic: topic?.summary ?? null,
    beforeLive,
    afterLive,
    keyBeforeLive,
    keyAfterLive,
  };
}
