/**
 * Reading a persona's files: the operator's override, tools and settings files rendered into
 * the persona's trusted sections, and the live context (mars: the newest daily notes and
 * SOUL.md; venus: tasks, today's events, the inbox and the newest meeting). Each is derived
 * once per version of the files it came from (`ReadingMemo`); a bad file is a warning
 * (`Warnings`), never a failure.
 */
import {
  buildMarsLiveContext,
  finishVenusLiveContext,
  LIVE_CONTEXT_MAX_CHARS,
  prepareVenusLiveContext,
  venusTimeKey,
  type LiveContext,
  type PreparedVenusLiveContext,
} from '../../core/persona/live-context.js';
import { sha256Hex } from '../../core/digest.js';
import type { Persona } from '../../core/persona/personas.js';
import { renderPersona, type RenderedPersona } from '../../core/persona/render.js';
import { geminiTools, type DeclaredTools } from '../../core/persona/gemini-setup.js';
import { asciiTools } from '../../core/persona/session.js';
import { TOOLS_FILE, type PersonaTool, type ToolsFile } from '../../core/persona/tools.js';
import { PERSONA_SETTINGS_FILE, type PersonaSettingsFile } from '../../core/persona/providers.js';
import type { RedactionCounts } from '../../core/pii.js';
import { newestMeetingFile } from '../../core/signals/meetings.js';
import { planDailyMemory, type DailyMemory, type DailyMemoryPlan } from '../../core/signals/memory.js';
import { schemaProblem, toAscii } from '../../core/text.js';
import type { SourceText } from '../../core/types.js';
import type { BrainReader, ListResult, ReadResult, Reason } from '../../io/brain.js';
import { PersonaSettingsFileSchema } from '../../../schemas/persona-settings-file.js';
import { ToolsFileSchema } from '../../../schemas/tools-file.js';
import { area, noMemos, type MemosOf } from '../../core/area.js';
import { remembered } from '../../core/memo.js';
import { NO_HEARTBEAT_MEMO, type HeartbeatMemo } from '../timezone.js';
import { deepFreeze } from '../job.js';

import { PERSONA_READS, type PersonaOptions } from './sources.js';

/**
 * What reading a persona's files remembers (areas of the app's cache set), each value under
 * a key that names everything it depends on: the versions of the files it came from
 * (`versionKey`), the options, and the date or minute where it depends on one.
 */
export const READING_AREAS = {
  /** `personas/tools.json` validated, by the file's version (`versionKey`). */
  toolsFiles: area<string, FileCheck<ToolsFile>>('sources.toolsFiles', 0.0025),
  /** `personas/settings.json` validated, by the file's version. */
  settingsFiles: area<string, FileCheck<PersonaSettingsFile>>('sources.settingsFiles', 0.0025),
  /** A persona's trusted sections, by `PreparedPersona.key`. */
  personas: area<string, PreparedPersona>('sources.personas', 0.02),
  /** What to read of `memory/` for a day, by the listing the brain hands out (the same array while the directory is unchanged). */
  dailyPlans: area<readonly string[], { today: string; plan: DailyMemoryPlan }>('sources.dailyPlans', 0.005),
  /** The newest meeting on or before a day, by the `meetings/` listing. */
  newestMeetings: area<readonly string[], { today: string; name: string | undefined }>('sources.newestMeetings', 0.005),
  /** A live context, by `BuiltLiveContext.key`. */
  liveContexts: area<string, BuiltLiveContext>('sources.liveContexts', 0.02),
  /** Venus's files parsed for a day, by the key `venusLiveContext` builds. */
  venusDays: area<string, PreparedVenusLiveContext>('sources.venusDays', 0.01),
};
export type ReadingMemo = HeartbeatMemo & MemosOf<typeof READING_AREAS>;

export const NO_READING_MEMO: ReadingMemo = Object.freeze({ ...NO_HEARTBEAT_MEMO, ...noMemos(READING_AREAS) });

/** A brain JSON file validated, or the warning that says why its fallback applies. */
export type FileCheck<T> = { file?: T; warning?: string };

/** Collects warnings; an unreadable brain root is said once, not once per file. */
export class Warnings {
  readonly list: string[] = [];
  /** Paths already reported, so a builder's "missing" for them is not said twice. */
  readonly reported = new Set<string>();
  private rootReported = false;

  add(warning: string): void {
    this.list.push(warning);
  }

  /** The text of a read, or undefined with a warning for anything but a plain miss. */
  text(result: ReadResult): string | undefined {
    if (result.status === 'ok') {
      for (const warning of result.warnings) this.add(warning);
      return result.text;
    }
    if (result.status !== 'missing') this.unreadable(result.path, result.status, result.reason);
    return undefined;
  }

  listing(result: ListResult): string[] {
    if (result.status === 'ok') {
      for (const warning of result.warnings) this.add(warning);
      return result.files;
    }
    if (result.status !== 'missing') this.unreadable(result.path, result.status, result.reason);
    return [];
  }

  unreadable(path: string, status: 'refused' | 'error', reason: Reason): void {
    this.reported.add(path);
    if (reason.code === 'root-unreadable') {
      if (!this.rootReported) this.add(`${reason.detail} (BRAIN_ROOT); compiled without brain context`);
      this.rootReported = true;
      return;
    }
    this.add(status === 'refused' ? `${path}: refused (${reason.detail}); skipped` : `${path}: could not be read (${reason.detail}); skipped`);
  }
}

/** A read's version, for cache keys: its sha256 (and whether it was cut) when read, else its status. */
export function versionKey(result: ReadResult | undefined): string {
  if (result === undefined) return '-';
  return result.status === 'ok' ? `${result.sha256}${result.truncated ? '+' : ''}` : result.status;
}

/** True when only part of the file was read (it is over its read cap). */
export function readInPart(result: ReadResult): boolean {
  return result.status === 'ok' && result.truncated;
}

// ---------------------------------------------------------------------------------------
// Persona sections, memoised per persona, override file and options.

export interface PreparedPersona {
  /** Names everything it was prepared from, for the compile key. */
  key: string;
  rendered: RenderedPersona;
  identity: SourceText;
  persona: SourceText;
  tools: SourceText;
  hardRules: SourceText;
  /** The session's tools, with realtime-safe ASCII descriptions (the same objects every time: never mutated). */
  sessionTools: PersonaTool[];
  /** sha256 of the session tools' JSON (the ETag covers it): worked out once per version of the files. */
  sessionToolsSha256: string;
  /** The session tools declared in Gemini's schema, and what the declarations lost: translated on a Gemini answer's first ask, once per version of the files (an OpenAI connect never pays for it). */
  gemini(): DeclaredTools;
  warnings: string[];
}

/** A JSON settings file of the brain validated by `schema`, or the warning that says why `fallback` applies. */
function validateJsonFile<T>(
  read: Extract<ReadResult, { status: 'ok' }>,
  file: { path: string; maxBytes: number; schema: { safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: ReadonlyArray<{ path: PropertyKey[]; message: string }> } } }; fallback: string },
): { file?: T; warning?: string } {
  if (read.truncated) return { warning: `${file.path} is over ${file.maxBytes} bytes; ${file.fallback}` };
  let json: unknown;
  try {
    json = JSON.parse(read.text);
  } catch {
    return { warning: `${file.path} is not valid JSON; ${file.fallback}` };
  }
  const result = file.schema.safeParse(json);
  if (result.success) return { file: result.data };
  const issue = result.error.issues[0]!;
  // The path and message may quote the file's keys: escaped and clamped (issue 27).
  return { warning: `${file.path} is invalid ${schemaProblem(issue)}; ${file.fallback}` };
}

/** `personas/tools.json` validated, or the warning that says why the default tools apply. */
function parseToolsFile(read: ReadResult, memo: ReadingMemo): FileCheck<ToolsFile> {
  if (read.status !== 'ok') return {};
  const spec = { path: TOOLS_FILE, maxBytes: PERSONA_READS.toolsFile.maxBytes, schema: ToolsFileSchema, fallback: 'the default tools apply' };
  return remembered(memo.toolsFiles, versionKey(read), () => validateJsonFile<ToolsFile>(read, spec), () => 2 * read.text.length + 512);
}

/** `personas/settings.json` validated, or the warning that says why the built-in voices apply. */
function parseSettingsFile(read: ReadResult, memo: ReadingMemo): FileCheck<PersonaSettingsFile> {
  if (read.status !== 'ok') return {};
  const spec = { path: PERSONA_SETTINGS_FILE, maxBytes: PERSONA_READS.settingsFile.maxBytes, schema: PersonaSettingsFileSchema, fallback: 'the built-in voices apply' };
  return remembered(memo.settingsFiles, versionKey(read), () => validateJsonFile<PersonaSettingsFile>(read, spec), () => 2 * read.text.length + 512);
}

/** The operator's files a persona is rendered with. */
interface PersonaFiles {
  override: ReadResult;
  tools: ReadResult;
  settings: ReadResult;
}

export function preparePersona(persona: Persona, files: PersonaFiles, ascii: boolean, options: PersonaOptions, memo: ReadingMemo): PreparedPersona {
  const writes = options.allowWriteTools === true;
  const crossLingual = options.crossLingual === true;
  const key = `persona|${persona.key}|${writes ? 1 : 0}|${crossLingual ? 1 : 0}|${ascii ? 1 : 0}|${options.policy.blocks.persona}|${versionKey(files.override)}|${versionKey(files.tools)}|${versionKey(files.settings)}`;
  return remembered(memo.personas, key, () => preparePersonaAfresh(key, persona, files, ascii, options, memo), preparedBytes);
}

function preparedBytes(prepared: PreparedPersona): number {
  const texts = [prepared.identity, prepared.persona, prepared.tools, prepared.hardRules].reduce((sum, section) => sum + section.text.length, 0);
  // The rendered sections, their ASCII copies and the tool schemas (as JSON Schema and as Gemini declares them).
  return 4 * texts + 24 * 1024;
}

function preparePersonaAfresh(key: string, persona: Persona, files: PersonaFiles, ascii: boolean, options: PersonaOptions, memo: ReadingMemo): PreparedPersona {
  const writes = options.allowWriteTools === true;
  const crossLingual = options.crossLingual === true;
  const { override } = files;
  const warnings: string[] = [];
  let overrideText: string | undefined;
  if (override.status === 'ok') {
    if (override.truncated || override.text.length > options.policy.blocks.persona) {
      warnings.push(`${override.path}: over ${options.policy.blocks.persona} chars; using the built-in persona`);
    } else overrideText = override.text;
  }
  const toolsFile = parseToolsFile(files.tools, memo);
  if (toolsFile.warning !== undefined) warnings.push(toolsFile.warning);
  const settingsFile = parseSettingsFile(files.settings, memo);
  if (settingsFile.warning !== undefined) warnings.push(settingsFile.warning);
  const renderOptions = { toolsFile: toolsFile.file, settingsFile: settingsFile.file, allowWriteTools: writes, crossLingual };
  let rendered = renderPersona(persona, { ...renderOptions, overrideText });
  const character = rendered.sections.find((section) => section.kind === 'persona')!;
  if (rendered.overridden && character.text.length > options.policy.blocks.persona) {
    warnings.push(`${override.path}: over ${options.policy.blocks.persona} chars; using the built-in persona`);
    rendered = renderPersona(persona, renderOptions);
  }
  warnings.push(...rendered.warnings);
  const section = (kind: string): SourceText => {
    const found = rendered.sections.find((candidate) => candidate.kind === kind)!;
    // Operator text from the brain is scrubbed like any brain text.
    const text = ascii ? toAscii(found.text) : found.text;
    return found.source.startsWith('builtin:') ? { source: found.source, text } : { source: found.source, text, brainDerived: true };
  };
  // Frozen, deeply: the same tools go out with every minute's answer, which keeps their JSON by the array (src/http/answer.ts).
  const sessionTools = asciiTools(rendered.tools);
  deepFreeze(sessionTools);
  let declared: DeclaredTools | undefined;
  return {
    key,
    rendered,
    identity: section('identity'),
    persona: section('persona'),
    tools: section('tools'),
    hardRules: section('hard-rules'),
    sessionTools,
    sessionToolsSha256: sha256Hex(JSON.stringify(sessionTools)),
    gemini: () => (declared ??= geminiTools(sessionTools)),
    warnings,
  };
}

// ---------------------------------------------------------------------------------------
// Listings: what to read from memory/ and meetings/, memoised per listing and date.

// The brain hands back the same listing array while the directory is unchanged, so the
// array itself is the key (an empty one is not worth keeping: it is built afresh).
function dailyPlan(names: readonly string[], today: string, memo: ReadingMemo): DailyMemoryPlan {
  if (names.length === 0) return planDailyMemory(names, today);
  const known = memo.dailyPlans.get(names);
  if (known?.today === today) return known.plan;
  const plan = planDailyMemory(names, today);
  memo.dailyPlans.set(names, { today, plan }, 64 * names.length + 256);
  return plan;
}

function newestMeeting(names: readonly string[], today: string, memo: ReadingMemo): string | undefined {
  if (names.length === 0) return newestMeetingFile(names, { onOrBefore: today });
  const known = memo.newestMeetings.get(names);
  if (known?.today === today) return known.name;
  const name = newestMeetingFile(names, { onOrBefore: today });
  memo.newestMeetings.set(names, { today, name }, 64 * names.length + 256);
  return name;
}

// ---------------------------------------------------------------------------------------
// Live context, memoised by the identities of its files and the date (and, for venus, the minute).

export interface BuiltLiveContext {
  /** Names everything it was built from, for the compile key. */
  key: string;
  text: string;
  warnings: string[];
  redactions: RedactionCounts;
}

const liveBytes = (built: BuiltLiveContext) => 4 * built.text.length + 2 * built.key.length + 1024;

function finishLive(key: string, live: LiveContext, reported: ReadonlySet<string>, ascii: boolean): BuiltLiveContext {
  // A file already reported as unsafe or unreadable is not also "missing".
  const warnings = live.warnings.filter((warning) => !(warning.endsWith(': missing') && reported.has(warning.slice(0, -': missing'.length))));
  return { key, text: ascii ? toAscii(live.text) : live.text, warnings, redactions: live.redactions };
}

export async function marsLiveContext(
  brain: BrainReader,
  setup: { soul: Promise<ReadResult>; memory: Promise<ListResult> },
  clock: { now: Date; timeZone: string; today: string },
  ascii: boolean,
  warnings: Warnings,
  memo: ReadingMemo,
): Promise<BuiltLiveContext> {
  const [soul, listing] = await Promise.all([setup.soul, setup.memory]);
  const soulText = warnings.text(soul);
  const plan = dailyPlan(warnings.listing(listing), clock.today, memo);
  const reads = await Promise.all(plan.files.map((name) => brain.read(`memory/${name}`, PERSONA_READS.daily)));
  const daily: DailyMemory[] = [];
  for (let i = 0; i < reads.length; i++) {
    const text = warnings.text(reads[i]!);
    if (text !== undefined) daily.push({ date: plan.files[i]!.slice(0, 10), text });
  }
  const key = `live|mars|${ascii ? 1 : 0}|${clock.today}|${versionKey(soul)}|${reads.map((read) => `${read.path}:${versionKey(read)}`).join(',')}`;
  return remembered(
    memo.liveContexts,
    key,
    () => finishLive(key, buildMarsLiveContext({ soul: soulText, daily }, clock, { time: memo.time }), warnings.reported, ascii),
    liveBytes,
  );
}

/** Venus's live context at a time of day, from files parsed once per version and day. */
export type VenusAt = (nowTime: string) => BuiltLiveContext;

export async function venusLiveContext(
  brain: BrainReader,
  setup: { tasks: Promise<ReadResult>; calendar: Promise<ReadResult>; inbox: Promise<ReadResult>; meetings: Promise<ListResult> },
  clock: { now: Date; timeZone: string; today: string },
  ascii: boolean,
  warnings: Warnings,
  memo: ReadingMemo,
): Promise<VenusAt> {
  const [tasks, calendar, inbox, listing] = await Promise.all([setup.tasks, setup.calendar, setup.inbox, setup.meetings]);
  const texts = { tasks: warnings.text(tasks), calendar: warnings.text(calendar), inbox: warnings.text(inbox) };
  const meetingName = newestMeeting(warnings.listing(listing), clock.today, memo);
  const meetingRead = meetingName === undefined ? undefined : await brain.read(`meetings/${meetingName}`, PERSONA_READS.meeting);
  const meetingText = meetingRead === undefined ? undefined : warnings.text(meetingRead);
  // Parsed once per version of its files and day; only which events are over depends on the minute.
  const preparedKey = `live|venus|${ascii ? 1 : 0}|${clock.today}|${versionKey(tasks)}|${versionKey(calendar)}|${versionKey(inbox)}|${meetingName ?? '-'}:${versionKey(meetingRead)}`;
  const prepared = remembered(
    memo.venusDays,
    preparedKey,
    (): PreparedVenusLiveContext => {
      const meeting = meetingName === undefined || meetingText === undefined ? undefined : { fileName: meetingName, text: meetingText };
      const partial = { tasks: readInPart(tasks), calendar: readInPart(calendar), inbox: readInPart(inbox) };
      return prepareVenusLiveContext({ ...texts, meeting, partial }, clock, { time: memo.time });
    },
    () => 4 * LIVE_CONTEXT_MAX_CHARS + 2 * preparedKey.length + 4096,
  );
  const reported = new Set(warnings.reported);
  return (nowTime) => {
    const key = `${preparedKey}|${venusTimeKey(prepared, nowTime)}`;
    return remembered(memo.liveContexts, key, () => finishLive(key, finishVenusLiveContext(prepared, nowTime), reported, ascii), liveBytes);
  };
}
