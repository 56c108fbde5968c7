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
import { decideRecall, receiptsFor } from '../core/governance.js';
import { rankIndexedMemoryNotes } from '../core/memory-notes.js';
import type { CompileInput, SourceText } from '../core/types.js';
import type { BrainReader, BrainSession } from '../io/brain.js';
import type { CompileJob, JobRead, JobResult } from './job.js';
import { policyKey, throughReplay } from './replay.js';
import { readHeartbeatTimezone } from './timezone.js';
import { chooseRole, readBlueprint, readConnections, readIdentity, readPolicy, readPurpose, readRole } from './worker/files.js';
import { NO_MEMORY, readMemory } from './worker/memory.js';
import { NO_WORKER_MEMO, type WorkerFiles, type WorkerMemo, type WorkerOptions, type WorkerRequest, type WorkerSources } from './worker/request.js';

export { MANDATORY_READ_BYTES, MAX_MEMORY_FILES, MAX_MEMORY_NOTES, MEMORY_FILE_BYTES, MEMORY_TOTAL_BYTES, NO_WORKER_MEMO, type WorkerFiles, type WorkerMemo, type WorkerOptions, type WorkerRequest, type WorkerSources } from './worker/request.js';


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
 * A worker's sources for one request: its files (read, or replayed from the record of an
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
  const { value: files, replayed } = await throughReplay(
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
          return { warnings, resolved: {}, compile: () => compileWorker(request, sources, compiler) };
        } catch (error) {
          // What was found before the failure is still reported: the failed delivery's trace keeps these warnings.
          return {
            warnings,
            resolved: {},
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

