/**
 * A worker's sources (`POST /compile`): reads `workers/<worker>/identity.md` (legacy
 * `charter.md`), `policy.json`, `connections.json`, the role (`roles/<role>.md`) and
 * `memory/*.md`, the channel's `purpose.md` and the platform's `platform/blueprint.md`,
 * through a brain reader, and builds the `CompileInput` with the request's items. No Fastify
 * here: the route and the CLI both run its jobs.
 *
 * The identity, purpose, role and blueprint are trusted text and never cut: one over the
 * read cap is a 422, a missing identity a 404 naming the file to create. A role the request
 * names must be admitted by the policy (else a 422 naming it) and exist (else a 404 naming
 * its file). Everything else degrades to a warning. Parsed files (policy, connections,
 * blueprint, memory-note indexes) are remembered per version of their bytes.
 */
import type { Compiler } from '../core/compile.js';
import { BLUEPRINT_PATH, decideRecall, parseBlueprint, receiptsFor, type Blueprint, type RecallDecision, type RecallPolicy } from '../core/governance.js';
import { indexMemoryNotes, rankIndexedMemoryNotes, type MemoryNoteIndex } from '../core/memory-notes.js';
import { mergePolicy } from '../core/policy.js';
import { quoteForWarning, schemaProblem } from '../core/text.js';
import {
  MAX_READ_BYTES,
  type BriefingItem,
  type Capability,
  type CompileInput,
  type Connection,
  type EvidenceItem,
  type ExperienceItem,
  type Phase,
  type Policy,
  type Preferences,
  type SourceText,
  type Surface,
} from '../core/types.js';
import { ProblemError } from '../errors.js';
import type { BrainFile, BrainReader, BrainSession, ReadResult } from '../io/brain.js';
import { ConnectionsFileSchema } from '../../schemas/connections-file.js';
import { PolicyFileSchema, type PolicyFile } from '../../schemas/policy.js';
import { noMemo, remembered, type Memo } from '../core/memo.js';
import type { CompileJob, JobRead, JobResult } from './job.js';
import { policyKey, throughSnapshot, type SnapshotMemo, type Snapshot } from './snapshot.js';
import { NO_HEARTBEAT_MEMO, readHeartbeatTimezone, type HeartbeatMemo } from './timezone.js';

/** Mandatory sources are read with a cap far above any block limit: a bigger file is a 422, never cut. */
export const MANDATORY_READ_BYTES = MAX_READ_BYTES;
const POLICY_READ_BYTES = 64 * 1024;
const CONNECTIONS_READ_BYTES = 64 * 1024;
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
const MEMORY_READ_BATCH = MEMORY_TOTAL_BYTES / MEMORY_FILE_BYTES;

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
interface Governance {
  recall: RecallPolicy;
  roles: { admitted: readonly string[]; default?: string | undefined };
}

const DEFAULT_GOVERNANCE: Governance = Object.freeze({ recall: 'always', roles: Object.freeze({ admitted: Object.freeze([]) }) });

type ParsedPolicy = { policy: Policy; governance: Governance } | { warning: string };
type ParsedConnections = { services: readonly Connection[] } | { warning: string };

/**
 * What a worker's sources remember (areas of the app's cache set), each value by a key that
 * names what it depends on: the version of the file's bytes (and whatever else went in).
 */
export interface WorkerMemo extends HeartbeatMemo, SnapshotMemo {
  /** A worker's files with the record of the reads that found them: `workerFilesKey`. */
  readonly workerFiles: Memo<string, Snapshot<WorkerFiles>>;
  /** `policy.json` parsed and merged onto the base policy: `policyFileKey`. */
  readonly policies: Memo<string, ParsedPolicy>;
  /** `connections.json` validated: `parsedFileKey`. */
  readonly connections: Memo<string, ParsedConnections>;
  /** `platform/blueprint.md` with its revision: the file's sha256. */
  readonly blueprints: Memo<string, Blueprint>;
  /** A memory file's notes and word index: `parsedFileKey` and the notes kept. */
  readonly memoryNotes: Memo<string, MemoryNoteIndex>;
}

/** A file's version and path (a warning or an index names the file). */
function parsedFileKey(file: BrainFile): string {
  return `${file.sha256}${file.truncated ? '+' : ''}|${file.path}`;
}

/** `parsedFileKey` and the policy it was merged onto. */
function policyFileKey(file: BrainFile, base: Policy, memo: WorkerMemo): string {
  return `${parsedFileKey(file)}|${policyKey(base, memo)}`;
}

export const NO_WORKER_MEMO: WorkerMemo = Object.freeze({
  ...NO_HEARTBEAT_MEMO,
  workerFiles: noMemo<string, Snapshot<WorkerFiles>>(),
  policyKeys: noMemo<Policy, string>(),
  policies: noMemo<string, ParsedPolicy>(),
  connections: noMemo<string, ParsedConnections>(),
  blueprints: noMemo<string, Blueprint>(),
  memoryNotes: noMemo<string, MemoryNoteIndex>(),
});

function governanceOf(file: PolicyFile): Governance {
  return { recall: file.recall ?? 'always', roles: file.roles ?? DEFAULT_GOVERNANCE.roles };
}

function parsePolicy(file: BrainFile, base: Policy): ParsedPolicy {
  let json: unknown;
  try {
    json = JSON.parse(file.text);
  } catch {
    return { warning: `${file.path} is not valid JSON; the default policy applies` };
  }
  const parsed = PolicyFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { warning: `${file.path} is invalid ${schemaProblem(issue)}; the default policy applies` };
  }
  return { policy: mergePolicy(base, parsed.data), governance: governanceOf(parsed.data) };
}

/** A mandatory brain file read whole, or the reason it cannot be used; its read warnings (invalid UTF-8) are kept. */
function mandatoryText(result: BrainFile, warnings: string[]): SourceText {
  if (result.truncated) {
    throw new ProblemError('CC_BUDGET_EXCEEDED', `${result.path} is ${result.size} bytes, more than can be read whole; it is never truncated.`, {
      extensions: { block: 'source', path: result.path, chars: result.size, limit: MANDATORY_READ_BYTES },
    });
  }
  warnings.push(...result.warnings);
  return { source: result.path, text: result.text, brainDerived: true };
}

async function readIdentity(brain: BrainReader, worker: string, warnings: string[]): Promise<SourceText> {
  for (const name of ['identity.md', 'charter.md']) {
    const result = await brain.read(`workers/${worker}/${name}`, { maxBytes: MANDATORY_READ_BYTES });
    if (result.status === 'ok') return mandatoryText(result, warnings);
    if (result.status !== 'missing') {
      throw new ProblemError('CC_UNPROCESSABLE', `${result.path} cannot be used: ${result.reason.detail}.`, { extensions: { path: result.path } });
    }
  }
  const hint = `create workers/${worker}/identity.md in the brain (BRAIN_ROOT) saying who the worker is`;
  throw new ProblemError('CC_NOT_FOUND', `No worker "${worker}": ${hint}.`, { extensions: { hint } });
}

async function readPolicy(
  brain: BrainReader,
  worker: string,
  base: Policy,
  memo: WorkerMemo,
  warnings: string[],
): Promise<{ policy: Policy; governance: Governance }> {
  const path = `workers/${worker}/policy.json`;
  const defaults = { policy: base, governance: DEFAULT_GOVERNANCE };
  const result = await brain.read(path, { maxBytes: POLICY_READ_BYTES });
  if (result.status === 'missing') return defaults;
  if (result.status !== 'ok') {
    warnings.push(`${path} could not be read (${result.reason.detail}); the default policy applies`);
    return defaults;
  }
  const parsed = remembered(memo.policies, policyFileKey(result, base, memo), () => parsePolicy(result, base), () => 4096);
  if ('warning' in parsed) {
    warnings.push(parsed.warning);
    return defaults;
  }
  return parsed;
}

function parseConnections(file: BrainFile): ParsedConnections {
  if (file.truncated) return { warning: `${file.path} is over ${CONNECTIONS_READ_BYTES} bytes; no connections block` };
  let json: unknown;
  try {
    json = JSON.parse(file.text);
  } catch {
    return { warning: `${file.path} is not valid JSON; no connections block` };
  }
  const parsed = ConnectionsFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { warning: `${file.path} is invalid ${schemaProblem(issue)}; no connections block` };
  }
  return { services: parsed.data };
}

/** `workers/<worker>/connections.json`, validated; absent when the file is (no block beats an empty promise). */
async function readConnections(brain: BrainReader, worker: string, memo: WorkerMemo, warnings: string[]): Promise<WorkerSources['connections']> {
  const path = `workers/${worker}/connections.json`;
  const result = await brain.read(path, { maxBytes: CONNECTIONS_READ_BYTES });
  if (result.status === 'missing') return undefined;
  if (result.status !== 'ok') {
    warnings.push(`${path} could not be read (${result.reason.detail}); no connections block`);
    return undefined;
  }
  const parsed = remembered(memo.connections, parsedFileKey(result), () => parseConnections(result), () => 4 * result.text.length + 1024);
  if ('warning' in parsed) {
    warnings.push(parsed.warning);
    return undefined;
  }
  return { source: path, services: parsed.services };
}

/** `platform/blueprint.md` with its revision; absent when the file is (the receipt then says `none`). */
async function readBlueprint(brain: BrainReader, memo: WorkerMemo, warnings: string[]): Promise<WorkerSources['blueprint']> {
  const result = await brain.read(BLUEPRINT_PATH, { maxBytes: MANDATORY_READ_BYTES });
  if (result.status === 'missing') return undefined;
  if (result.status !== 'ok') {
    warnings.push(`${BLUEPRINT_PATH} could not be read (${result.reason.detail}); compiled without the platform blueprint`);
    return undefined;
  }
  const text = mandatoryText(result, warnings);
  const blueprint = remembered(memo.blueprints, result.sha256, (): Blueprint => parseBlueprint(text.text, result.sha256), (parsed) => 2 * parsed.body.length + 512);
  if (blueprint.warning !== undefined) warnings.push(blueprint.warning);
  return { text: { source: BLUEPRINT_PATH, text: blueprint.body, brainDerived: true }, revision: blueprint.revision };
}

/**
 * The role this run plays: the request's, which the policy must admit (else a 422 naming
 * it, before anything of it is read), else the policy's default, else none.
 */
function chooseRole(request: WorkerRequest, governance: Governance): { id: string; selectedBy: 'request' | 'default' } | undefined {
  const { admitted } = governance.roles;
  if (request.role === undefined) return governance.roles.default === undefined ? undefined : { id: governance.roles.default, selectedBy: 'default' };
  if (!admitted.includes(request.role)) {
    const admits = admitted.length === 0 ? 'admits no role' : `admits ${admitted.join(', ')}`;
    throw new ProblemError(
      'CC_ROLE_NOT_ADMITTED',
      `Worker "${request.worker}" does not admit role "${request.role}": its policy (workers/${request.worker}/policy.json, roles.admitted) ${admits}.`,
      { extensions: { role: request.role, admitted: [...admitted] } },
    );
  }
  return { id: request.role, selectedBy: 'request' };
}

/**
 * The chosen role's file, read whole: a role the request named must exist (else a 404 naming
 * its file); the policy's default degrades to a warning when its file cannot be used.
 */
async function readRole(
  brain: BrainReader,
  worker: string,
  chosen: { id: string; selectedBy: 'request' | 'default' } | undefined,
  warnings: string[],
): Promise<WorkerSources['role']> {
  if (chosen === undefined) return undefined;
  const { id, selectedBy } = chosen;
  const path = `workers/${worker}/roles/${id}.md`;
  const result = await brain.read(path, { maxBytes: MANDATORY_READ_BYTES });
  if (result.status === 'ok') return { id, selectedBy, text: mandatoryText(result, warnings) };
  if (selectedBy === 'default') {
    warnings.push(
      result.status === 'missing'
        ? `default role "${id}" has no file (${path}); compiled without a role`
        : `${path} could not be read (${result.reason.detail}); compiled without a role`,
    );
    return undefined;
  }
  if (result.status === 'missing') {
    throw new ProblemError('CC_NOT_FOUND', `No role "${id}" for worker "${worker}": create ${path} in the brain, or name another role.`, {
      extensions: { role: id, path },
    });
  }
  throw new ProblemError('CC_UNPROCESSABLE', `${path} cannot be used: ${result.reason.detail}.`, { extensions: { role: id, path } });
}

async function readPurpose(brain: BrainReader, channelId: string, warnings: string[]): Promise<SourceText | undefined> {
  const result = await brain.read(`channels/${channelId}/purpose.md`, { maxBytes: MANDATORY_READ_BYTES });
  if (result.status === 'ok') return mandatoryText(result, warnings);
  warnings.push(
    result.status === 'missing'
      ? `channel "${channelId}" has no purpose (channels/${channelId}/purpose.md); compiled without one`
      : `${result.path} could not be read (${result.reason.detail}); compiled without a purpose`,
  );
  return undefined;
}

function memoryNotes(result: BrainFile, memo: WorkerMemo, maxNotes: number): MemoryNoteIndex {
  return remembered(memo.memoryNotes, `${parsedFileKey(result)}|${maxNotes}`, () => indexMemoryNotes(result.path, result.text, maxNotes), () => memoryNotesBytes(result));
}

/** What a memory file's notes and word index weigh. */
function memoryNotesBytes(result: BrainFile): number {
  return 8 * result.text.length + 1024;
}

/** What a compile left out of a worker's memory to stay within its caps. */
function memoryOmissions(dir: string, files: number, notes: number): string | undefined {
  if (files === 0 && notes === 0) return undefined;
  const parts = [
    ...(files > 0 ? [`${files} older ${files === 1 ? 'file' : 'files'}`] : []),
    ...(notes > 0 ? [`${notes} older ${notes === 1 ? 'note' : 'notes'}`] : []),
  ];
  return `${dir}: ${parts.join(' and ')} left out; a compile reads at most ${MEMORY_TOTAL_BYTES / 1024 / 1024} MiB and ${MAX_MEMORY_NOTES} notes of memory, the newest kept`;
}

/** A worker's memory notes, oldest file first (ranking ties keep file order: files by name, entries top to bottom), and what they weigh. */
interface ReadMemory {
  readonly indexes: readonly MemoryNoteIndex[];
  readonly bytes: number;
}

const NO_MEMORY: ReadMemory = Object.freeze({ indexes: Object.freeze([]), bytes: 0 });

/**
 * A worker's memory notes: its newest files read first (by name, last first, in batches),
 * each file's newest notes kept, until `MEMORY_TOTAL_BYTES` or `MAX_MEMORY_NOTES` is
 * reached; older ones are left out with one warning.
 */
async function readMemory(brain: BrainReader, worker: string, memo: WorkerMemo, warnings: string[]): Promise<ReadMemory> {
  const dir = `workers/${worker}/memory`;
  const listing = await brain.list(dir);
  if (listing.status !== 'ok') {
    if (listing.status !== 'missing') warnings.push(`${dir} could not be listed (${listing.reason.detail})`);
    return NO_MEMORY;
  }
  warnings.push(...listing.warnings);
  const names = listing.files.filter((name) => name.endsWith('.md'));
  if (names.length > MAX_MEMORY_FILES) warnings.push(`${dir} has ${names.length} files; only the last ${MAX_MEMORY_FILES} by name (the newest) are recalled`);
  const newestFirst = names.slice(-MAX_MEMORY_FILES).reverse();
  const kept: MemoryNoteIndex[] = [];
  let bytes = 0;
  let bytesLeft = MEMORY_TOTAL_BYTES;
  let notesLeft = MAX_MEMORY_NOTES;
  let filesLeftOut = 0;
  let notesLeftOut = 0;
  for (let start = 0; start < newestFirst.length; start += MEMORY_READ_BATCH) {
    const batch = newestFirst.slice(start, start + MEMORY_READ_BATCH);
    if (bytesLeft === 0 || notesLeft === 0) {
      filesLeftOut += batch.length;
      continue;
    }
    const results: ReadResult[] = await Promise.all(batch.map((name) => brain.read(`${dir}/${name}`, { maxBytes: MEMORY_FILE_BYTES, keep: 'tail' })));
    for (const result of results) {
      if (result.status !== 'ok') {
        if (result.status !== 'missing') warnings.push(`${quoteForWarning(result.path)} could not be read (${result.reason.detail})`);
        continue;
      }
      if (bytesLeft === 0 || notesLeft === 0 || result.textBytes > bytesLeft) {
        bytesLeft = 0;
        filesLeftOut++;
        continue;
      }
      warnings.push(...result.warnings);
      bytesLeft -= result.textBytes;
      const index = memoryNotes(result, memo, notesLeft);
      bytes += memoryNotesBytes(result);
      notesLeft -= index.notes.length;
      notesLeftOut += index.total - index.notes.length;
      kept.push(index);
    }
  }
  const omissions = memoryOmissions(dir, filesLeftOut, notesLeftOut);
  if (omissions !== undefined) warnings.push(omissions);
  return { indexes: kept.reverse(), bytes };
}

/**
 * What a worker's files give one kind of request, kept as a snapshot (`throughSnapshot`) of
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
  /** What reading found, in order: pushed again on every request the snapshot serves. */
  readonly warnings: readonly string[];
  /** What its texts and notes weigh. */
  readonly bytes: number;
}

/**
 * The key of a worker's files: everything in the request that decides what is read — the
 * worker, channel, role and zone asked for, the fields recall looks at — and the options.
 */
function workerFilesKey(request: WorkerRequest, options: WorkerOptions, memo: WorkerMemo): string {
  const recallFields = [request.message !== undefined, request.evidence !== undefined && request.evidence.length > 0];
  const asked = [request.worker, request.channelId ?? null, request.role ?? null, request.timezone ?? null, options.defaultTimeZone, ...recallFields];
  return `${JSON.stringify(asked)}|${policyKey(options.policy, memo)}`;
}

/**
 * Reads a worker's files: the identity first (nothing else is read for a worker that does
 * not exist), then its policy, connections, the platform blueprint, the channel's purpose
 * and the operator's zone at once; then, as the policy decides, the role and the memory
 * notes — none read at all on a clean-room worker's clean run. Warnings are pushed to
 * `warnings` as they are found, so a read that fails half way still reports them.
 */
async function gatherWorkerFiles(brain: BrainReader, request: WorkerRequest, options: WorkerOptions, memo: WorkerMemo, warnings: string[]): Promise<WorkerFiles> {
  const first = warnings.length;
  const identity = await readIdentity(brain, request.worker, warnings);
  const [{ policy, governance }, connections, blueprint, purpose, zone] = await Promise.all([
    readPolicy(brain, request.worker, options.policy, memo, warnings),
    readConnections(brain, request.worker, memo, warnings),
    readBlueprint(brain, memo, warnings),
    request.channelId === undefined ? undefined : readPurpose(brain, request.channelId, warnings),
    readHeartbeatTimezone(brain, { requested: request.timezone, defaultTimeZone: options.defaultTimeZone }, memo),
  ]);
  warnings.push(...zone.warnings);
  const recall = decideRecall(governance.recall, request);
  const chosen = chooseRole(request, governance);
  const [role, memory] = await Promise.all([
    readRole(brain, request.worker, chosen, warnings),
    recall.suppressed ? NO_MEMORY : readMemory(brain, request.worker, memo, warnings),
  ]);
  const texts = [identity, purpose, role?.text, blueprint?.text].reduce((sum, text) => sum + 2 * (text?.text.length ?? 0), 0);
  const bytes = 4096 + texts + memory.bytes;
  return { identity, policy, purpose, blueprint, connections, role, recall, timeZone: zone.timeZone, memory: memory.indexes, warnings: warnings.slice(first), bytes };
}

/**
 * A worker's sources for one request: its files (read, or replayed from the snapshot of an
 * earlier request's reads while every lookup they relied on still holds), and its memory
 * notes ranked against the turn's text.
 */
export async function readWorkerSources(
  brain: BrainSession,
  request: WorkerRequest,
  options: WorkerOptions,
  memo: WorkerMemo,
  warnings: string[],
): Promise<WorkerSources> {
  const { value: files, replayed } = await throughSnapshot(
    brain,
    memo.workerFiles,
    workerFilesKey(request, options, memo),
    { fits: () => true, bytes: (kept) => kept.bytes, freeze: memo.freezeShared },
    () => gatherWorkerFiles(brain, request, options, memo, warnings),
  );
  if (replayed) warnings.push(...files.warnings);
  const query = request.message ?? request.task ?? '';
  const memory = rankIndexedMemoryNotes(files.memory, query).map((note): SourceText => ({ source: note.source, text: note.text, brainDerived: true }));
  const sources: WorkerSources = { identity: files.identity, policy: files.policy, memory, recall: files.recall, timeZone: files.timeZone };
  if (files.purpose) sources.purpose = files.purpose;
  if (files.connections) sources.connections = files.connections;
  if (files.blueprint) sources.blueprint = files.blueprint;
  if (files.role) sources.role = files.role;
  return sources;
}

/** The worker's `CompileInput`: its sources, then the request's items, each in its fixed place. */
export function workerInput(request: WorkerRequest, sources: WorkerSources): CompileInput {
  return {
    subject: { kind: 'worker', id: request.worker },
    surface: request.surface,
    phase: request.phase,
    policy: sources.policy,
    clock: { now: request.now, timeZone: sources.timeZone },
    identity: sources.identity,
    ...(sources.blueprint ? { blueprint: sources.blueprint.text } : {}),
    ...(sources.connections ? { connections: sources.connections } : {}),
    ...(sources.role ? { role: sources.role.text } : {}),
    ...(sources.purpose ? { purpose: sources.purpose } : {}),
    memory: sources.memory,
    ...(request.capabilities ? { capabilities: request.capabilities } : {}),
    ...(request.briefing ? { briefing: request.briefing } : {}),
    ...(request.experiences ? { experiences: request.experiences } : {}),
    ...(request.evidence ? { evidence: request.evidence } : {}),
    ...(request.preferences ? { preferences: request.preferences } : {}),
    ...(request.engine !== undefined ? { engine: request.engine } : {}),
    ...(request.task !== undefined ? { task: { source: 'request:task', text: request.task } } : {}),
    ...(request.message !== undefined ? { message: { source: 'request:message', text: request.message } } : {}),
  };
}

/**
 * Compiles a worker's sources; the result's extras are its recall decision and the receipts
 * of what shaped the prompt, which the trace records too.
 */
export function compileWorker(request: WorkerRequest, sources: WorkerSources, compiler: Compiler): JobResult {
  const compiled = compiler.compile(workerInput(request, sources));
  const receipts = receiptsFor(compiled, {
    role: sources.role ? { id: sources.role.id, selectedBy: sources.role.selectedBy } : undefined,
    blueprintRevision: sources.blueprint?.revision,
    preferences: request.preferences,
  });
  return { compiled, extra: { recall: sources.recall, receipts }, record: { recall: sources.recall, receipts } };
}

/** A worker's compile jobs, for `POST /compile` and `context-compiler compile --worker`. */
export function createWorkerSources(options: WorkerOptions, deps: { compiler: Compiler; memo?: WorkerMemo }) {
  const compiler: Compiler = deps.compiler;
  const memo = deps.memo ?? NO_WORKER_MEMO;
  return {
    job: (request: WorkerRequest): CompileJob => ({
      async read(brain): Promise<JobRead> {
        const warnings: string[] = [];
        try {
          const sources = await readWorkerSources(brain, request, options, memo, warnings);
          return { warnings, facts: {}, compile: () => compileWorker(request, sources, compiler) };
        } catch (error) {
          // What was found before the failure is still reported: the failed delivery's trace keeps these warnings.
          return {
            warnings,
            facts: {},
            compile: () => {
              throw error;
            },
          };
        }
      },
    }),
  };
}

export type WorkerSourcesFactory = ReturnType<typeof createWorkerSources>;
