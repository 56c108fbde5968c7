/**
 * What a worker compile is asked for and reads: the request, the options, the sources it
 * gives the compiler, the files kept per kind of request, and what the worker sources
 * remember (`WorkerMemo`) — the shapes `files.ts`, `memory.ts` and `../worker.ts` share.
 */
import type { Blueprint, RecallDecision, RecallPolicy } from '../../core/governance.js';
import type { MemoryNoteIndex } from '../../core/memory-notes.js';
import { MAX_READ_BYTES, type BriefingItem, type Capability, type Connection, type EvidenceItem, type ExperienceItem, type Phase, type Policy, type Preferences, type SourceText, type Surface } from '../../core/types.js';
import { area, noMemos, type MemosOf } from '../../core/area.js';
import { REPLAY_AREAS, type ReplayMemo, type Replayable } from '../replay.js';
import { NO_HEARTBEAT_MEMO, type HeartbeatMemo } from '../timezone.js';

/** Mandatory sources are read with a cap far above any block limit: a bigger file is a 422, never cut. */
export const MANDATORY_READ_BYTES = MAX_READ_BYTES;
export const POLICY_READ_BYTES = 64 * 1024;
export const CONNECTIONS_READ_BYTES = 64 * 1024;
/** Each memory file is read up to this many bytes, its newest part (the end) kept. */
export const MEMORY_FILE_BYTES = 64 * 1024;
/** The newest (last by name) this many memory files are considered. */
export const MAX_MEMORY_FILES = 64;
/**
 * What one compile reads and parses of a worker's memory notes, newest first: this many bytes
 * across its files, and this many notes. Issue 27: 32 files of short notes, within the
 * per-file caps, parsed into 134k notes ran the 144 MB heap out; past these, older files and
 * notes are left out with a warning.
 */
export const MEMORY_TOTAL_BYTES = 1024 * 1024;
export const MAX_MEMORY_NOTES = 1000;
/** Memory files read at once: a batch is at most `MEMORY_TOTAL_BYTES`. */
export const MEMORY_READ_BATCH = MEMORY_TOTAL_BYTES / MEMORY_FILE_BYTES;

/** One phase of a worker's conversation or task, as `POST /compile` carries it (identifiers already validated). */
export interface WorkerRequest {
  phase: Phase;
  surface: Surface;
  worker: string;
  channelId?: string | undefined;
  /** The role to play; else the policy's default role. */
  role?: string | undefined;
  task?: string | undefined;
  message?: string | undefined;
  capabilities?: readonly Capability[] | undefined;
  briefing?: readonly BriefingItem[] | undefined;
  evidence?: readonly EvidenceItem[] | undefined;
  experiences?: readonly ExperienceItem[] | undefined;
  preferences?: Preferences | undefined;
  /** The engine the prompt is for: enters the route key only. */
  engine?: string | undefined;
  /** The instant to compile for: the caller's `now`, else the time of the request. */
  now: Date;
  /** IANA zone, as the request names it (`timezone` on the wire); else heartbeat-state, else `defaultTimeZone`. */
  timezone?: string | undefined;
}

export interface WorkerOptions {
  /** The policy a worker's `policy.json` is merged onto. */
  policy: Policy;
  defaultTimeZone: string;
}

export interface WorkerSources {
  identity: SourceText;
  policy: Policy;
  purpose?: SourceText;
  blueprint?: { text: SourceText; revision: string };
  connections?: { source: string; services: readonly Connection[] };
  role?: { id: string; selectedBy: 'request' | 'default'; text: SourceText };
  memory: SourceText[];
  recall: RecallDecision;
  timeZone: string;
}

/** What a worker's `policy.json` decides beyond the budget. */
export interface Governance {
  recall: RecallPolicy;
  roles: { admitted: readonly string[]; default?: string | undefined };
}

export const DEFAULT_GOVERNANCE: Governance = Object.freeze({ recall: 'always', roles: Object.freeze({ admitted: Object.freeze([]) }) });

export type ParsedPolicy = { policy: Policy; governance: Governance } | { warning: string };
export type ParsedConnections = { services: readonly Connection[] } | { warning: string };

/**
 * What a worker's sources remember (areas of the app's cache set), each value by a key that
 * names what it depends on: the version of the file's bytes (and whatever else went in).
 */
export const WORKER_AREAS = {
  /** A worker's files with the record of the reads that found them: `workerFilesKey`. */
  workerFiles: area<string, Replayable<WorkerFiles>>('sources.workerFiles', 0.01),
  /** `policy.json` parsed and merged onto the base policy: `policyFileKey`. */
  policies: area<string, ParsedPolicy>('sources.policies', 0.005),
  /** `connections.json` validated: `parsedFileKey`. */
  connections: area<string, ParsedConnections>('sources.connections', 0.005),
  /** `platform/blueprint.md` with its revision: the file's sha256. */
  blueprints: area<string, Blueprint>('sources.blueprints', 0.005),
  /** A memory file's notes and word index: `parsedFileKey` and the notes kept. */
  memoryNotes: area<string, MemoryNoteIndex>('sources.memoryNotes', 0.015),
};
export type WorkerMemo = HeartbeatMemo & ReplayMemo & MemosOf<typeof WORKER_AREAS>;

export const NO_WORKER_MEMO: WorkerMemo = Object.freeze({ ...NO_HEARTBEAT_MEMO, ...noMemos(REPLAY_AREAS), ...noMemos(WORKER_AREAS) });

/**
 * What a worker's files give one kind of request, kept with the record (`throughReplay`) of
 * the reads that found it: everything but the ranking of its memory notes against the
 * turn's text.
 */
export interface WorkerFiles {
  readonly identity: SourceText;
  readonly policy: Policy;
  readonly purpose?: SourceText | undefined;
  readonly blueprint?: WorkerSources['blueprint'];
  readonly connections?: WorkerSources['connections'];
  readonly role?: WorkerSources['role'];
  readonly recall: RecallDecision;
  readonly timeZone: string;
  /** The memory notes kept, oldest file first; none when recall is suppressed. */
  readonly memory: readonly MemoryNoteIndex[];
  /** What reading found, in order: pushed again on every request the kept files serve. */
  readonly warnings: readonly string[];
  /** What its texts and notes weigh. */
  readonly bytes: number;
}
