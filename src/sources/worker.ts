/**
 * A worker's sources (SPEC §3, `POST /compile`): reads `workers/<worker>/identity.md` (legacy
 * `charter.md`), `policy.json` and `memory/*.md`, and the channel's `purpose.md`, through a
 * brain reader, and builds the `CompileInput` with the request's items. No Fastify here:
 * the route and the CLI both run its jobs.
 *
 * The identity and the purpose are mandatory text and never cut: one over the read cap is a
 * 422, a missing identity a 404 naming the file to create. Everything else degrades to a
 * warning. Parsed files (policy, memory-note indexes) are remembered per version of their
 * bytes.
 */
import type { Compiler } from '../core/compile.js';
import { indexMemoryNotes, rankIndexedMemoryNotes, type MemoryNoteIndex } from '../core/memory-notes.js';
import { mergePolicy } from '../core/policy.js';
import { MAX_READ_BYTES, type BriefingItem, type Capability, type CompileInput, type EvidenceItem, type Phase, type Policy, type Preferences, type SourceText, type Surface } from '../core/types.js';
import { ProblemError } from '../errors.js';
import type { BrainFile, BrainReader, ReadResult } from '../io/brain.js';
import { PolicyFileSchema } from '../../schemas/policy.js';
import { NO_SOURCE_MEMO, remembered, type CompileJob, type JobRead, type SourceDeps, type SourceMemo } from './job.js';
import { readHeartbeatTimezone } from './timezone.js';

/** Mandatory sources are read with a cap far above any block limit: a bigger file is a 422, never cut. */
export const MANDATORY_READ_BYTES = MAX_READ_BYTES;
const POLICY_READ_BYTES = 64 * 1024;
const MEMORY_FILE_BYTES = 64 * 1024;
const MAX_MEMORY_FILES = 64;

/** One phase of a worker's conversation or task, as `POST /compile` carries it (identifiers already validated). */
export interface WorkerRequest {
  phase: Phase;
  surface: Surface;
  worker: string;
  channelId?: string | undefined;
  task?: string | undefined;
  message?: string | undefined;
  capabilities?: readonly Capability[] | undefined;
  briefing?: readonly BriefingItem[] | undefined;
  evidence?: readonly EvidenceItem[] | undefined;
  preferences?: Preferences | undefined;
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

interface WorkerSources {
  identity: SourceText;
  policy: Policy;
  purpose?: SourceText;
  memory: SourceText[];
  timeZone: string;
}

type ParsedPolicy = { policy: Policy } | { warning: string };

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
    return { warning: `${file.path} is invalid at /${issue.path.join('/')}: ${issue.message}; the default policy applies` };
  }
  return { policy: mergePolicy(base, parsed.data) };
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
      throw new ProblemError('CC_UNPROCESSABLE', `${result.path} cannot be used: ${result.reason}.`, { extensions: { path: result.path } });
    }
  }
  const hint = `create workers/${worker}/identity.md in the brain (BRAIN_ROOT) saying who the worker is`;
  throw new ProblemError('CC_NOT_FOUND', `No worker "${worker}": ${hint}.`, { extensions: { hint } });
}

async function readPolicy(brain: BrainReader, worker: string, base: Policy, memo: SourceMemo, warnings: string[]): Promise<Policy> {
  const path = `workers/${worker}/policy.json`;
  const result = await brain.read(path, { maxBytes: POLICY_READ_BYTES });
  if (result.status === 'missing') return base;
  if (result.status !== 'ok') {
    warnings.push(`${path} could not be read (${result.reason}); the default policy applies`);
    return base;
  }
  // Keyed by path too: the warning names the file.
  const key = `policy|${result.sha256}${result.truncated ? '+' : ''}|${JSON.stringify(base)}|${path}`;
  const parsed = remembered(memo.parsed, key, () => parsePolicy(result, base), () => 2 * key.length + 4096);
  if ('warning' in parsed) {
    warnings.push(parsed.warning);
    return base;
  }
  return parsed.policy;
}

async function readPurpose(brain: BrainReader, channelId: string, warnings: string[]): Promise<SourceText | undefined> {
  const result = await brain.read(`channels/${channelId}/purpose.md`, { maxBytes: MANDATORY_READ_BYTES });
  if (result.status === 'ok') return mandatoryText(result, warnings);
  warnings.push(
    result.status === 'missing'
      ? `channel "${channelId}" has no purpose (channels/${channelId}/purpose.md); compiled without one`
      : `${result.path} could not be read (${result.reason}); compiled without a purpose`,
  );
  return undefined;
}

function memoryNotes(result: BrainFile, memo: SourceMemo): MemoryNoteIndex {
  const key = `notes|${result.sha256}${result.truncated ? '+' : ''}|${result.path}`;
  return remembered(memo.parsed, key, () => indexMemoryNotes(result.path, result.text), () => 8 * result.text.length + 1024);
}

async function readMemory(brain: BrainReader, worker: string, query: string, memo: SourceMemo, warnings: string[]): Promise<SourceText[]> {
  const dir = `workers/${worker}/memory`;
  const listing = await brain.list(dir);
  if (listing.status !== 'ok') {
    if (listing.status !== 'missing') warnings.push(`${dir} could not be listed (${listing.reason})`);
    return [];
  }
  const names = listing.files.filter((name) => name.endsWith('.md'));
  if (names.length > MAX_MEMORY_FILES) warnings.push(`${dir} has ${names.length} files; only the first ${MAX_MEMORY_FILES} by name are recalled`);
  const results: ReadResult[] = await Promise.all(names.slice(0, MAX_MEMORY_FILES).map((name) => brain.read(`${dir}/${name}`, { maxBytes: MEMORY_FILE_BYTES })));
  const indexes: MemoryNoteIndex[] = [];
  for (const result of results) {
    if (result.status !== 'ok') {
      if (result.status !== 'missing') warnings.push(`${result.path} could not be read (${result.reason})`);
      continue;
    }
    warnings.push(...result.warnings);
    indexes.push(memoryNotes(result, memo));
  }
  return rankIndexedMemoryNotes(indexes, query).map((note) => ({ source: note.source, text: note.text, brainDerived: true }));
}

/**
 * Reads a worker's sources: the identity first (nothing else is read for a worker that does
 * not exist), then its policy, the channel's purpose, its memory notes ranked against the
 * turn's text, and the operator's zone, at once. Warnings are pushed to `warnings` as they
 * are found, so a read that fails half way still reports them.
 */
export async function readWorkerSources(
  brain: BrainReader,
  request: WorkerRequest,
  options: WorkerOptions,
  memo: SourceMemo,
  warnings: string[],
): Promise<WorkerSources> {
  const identity = await readIdentity(brain, request.worker, warnings);
  const [policy, purpose, memory, zone] = await Promise.all([
    readPolicy(brain, request.worker, options.policy, memo, warnings),
    request.channelId === undefined ? undefined : readPurpose(brain, request.channelId, warnings),
    readMemory(brain, request.worker, request.message ?? request.task ?? '', memo, warnings),
    readHeartbeatTimezone(brain, { requested: request.timezone, defaultTimeZone: options.defaultTimeZone }, memo),
  ]);
  warnings.push(...zone.warnings);
  const sources: WorkerSources = { identity, policy, memory, timeZone: zone.timeZone };
  if (purpose) sources.purpose = purpose;
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
    ...(sources.purpose ? { purpose: sources.purpose } : {}),
    memory: sources.memory,
    ...(request.capabilities ? { capabilities: request.capabilities } : {}),
    ...(request.briefing ? { briefing: request.briefing } : {}),
    ...(request.evidence ? { evidence: request.evidence } : {}),
    ...(request.preferences ? { preferences: request.preferences } : {}),
    ...(request.task !== undefined ? { task: { source: 'request:task', text: request.task } } : {}),
    ...(request.message !== undefined ? { message: { source: 'request:message', text: request.message } } : {}),
  };
}

/** A worker's compile jobs, for `POST /compile` and `context-compiler compile --worker`. */
export function createWorkerSources(options: WorkerOptions, deps: SourceDeps) {
  const compiler: Compiler = deps.compiler;
  const memo = deps.memo ?? NO_SOURCE_MEMO;
  return {
    job: (request: WorkerRequest): CompileJob => ({
      async read(brain): Promise<JobRead> {
        const warnings: string[] = [];
        try {
          const sources = await readWorkerSources(brain, request, options, memo, warnings);
          return { warnings, facts: {}, compile: () => ({ compiled: compiler.compile(workerInput(request, sources)) }) };
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
