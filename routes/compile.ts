import type { FastifyInstance } from 'fastify';
import { compile } from '../src/core/compile.js';
import { indexMemoryNotes, rankIndexedMemoryNotes, type MemoryNoteIndex } from '../src/core/memory-notes.js';
import { DEFAULT_POLICY, mergePolicy } from '../src/core/policy.js';
import { MAX_READ_BYTES, type Policy, type SourceText } from '../src/core/types.js';
import { ProblemError } from '../src/errors.js';
import { compileAndDeliver, runIdFor, type DeliveryRequest } from '../src/http/deliver.js';
import { responseJsonSchema } from '../src/http/zod.js';
import { memoizePerFile, readHeartbeatTimezone, type BrainFile, type BrainSession } from '../src/io/brain.js';
import { CompileQuerySchema, CompileRequestSchema, type CompileRequest } from '../schemas/compile.js';
import { CompiledResponseSchema } from '../schemas/compiled.js';
import { PolicyFileSchema } from '../schemas/policy.js';

/** Mandatory sources are read with a cap far above any block limit (the largest any read may use): a bigger file is a 422, never cut. */
const MANDATORY_READ_BYTES = MAX_READ_BYTES;
const MEMORY_FILE_BYTES = 64 * 1024;
const MAX_MEMORY_FILES = 64;

/** What a route makes of a worker's brain files, computed once per version of each file. */
interface WorkerParsers {
  policy(file: BrainFile): { policy: Policy } | { warning: string };
  memoryNotes(file: BrainFile): MemoryNoteIndex;
}

function createWorkerParsers(base: Policy): WorkerParsers {
  return {
    policy: memoizePerFile((file) => {
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
    }),
    memoryNotes: memoizePerFile((file) => indexMemoryNotes(file.path, file.text)),
  };
}

interface WorkerSources {
  identity: SourceText;
  policy: Policy;
  purpose?: SourceText;
  memory: SourceText[];
  timezone: string;
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

async function readIdentity(brain: BrainSession, worker: string, warnings: string[]): Promise<SourceText> {
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

async function readPolicy(brain: BrainSession, worker: string, base: Policy, parsers: WorkerParsers, warnings: string[]): Promise<Policy> {
  const path = `workers/${worker}/policy.json`;
  const result = await brain.read(path, { maxBytes: 64 * 1024 });
  if (result.status === 'missing') return base;
  if (result.status !== 'ok') {
    warnings.push(`${path} could not be read (${result.reason}); the default policy applies`);
    return base;
  }
  const parsed = parsers.policy(result);
  if ('warning' in parsed) {
    warnings.push(parsed.warning);
    return base;
  }
  return parsed.policy;
}

async function readPurpose(brain: BrainSession, channelId: string, warnings: string[]): Promise<SourceText | undefined> {
  const result = await brain.read(`channels/${channelId}/purpose.md`, { maxBytes: MANDATORY_READ_BYTES });
  if (result.status === 'ok') return mandatoryText(result, warnings);
  warnings.push(
    result.status === 'missing'
      ? `channel "${channelId}" has no purpose (channels/${channelId}/purpose.md); compiled without one`
      : `${result.path} could not be read (${result.reason}); compiled without a purpose`,
  );
  return undefined;
}

async function readMemory(brain: BrainSession, worker: string, query: string, parsers: WorkerParsers, warnings: string[]): Promise<SourceText[]> {
  const dir = `workers/${worker}/memory`;
  const listing = await brain.list(dir);
  if (listing.status !== 'ok') {
    if (listing.status !== 'missing') warnings.push(`${dir} could not be listed (${listing.reason})`);
    return [];
  }
  const names = listing.files.filter((name) => name.endsWith('.md'));
  if (names.length > MAX_MEMORY_FILES) warnings.push(`${dir} has ${names.length} files; only the first ${MAX_MEMORY_FILES} by name are recalled`);
  const results = await Promise.all(names.slice(0, MAX_MEMORY_FILES).map((name) => brain.read(`${dir}/${name}`, { maxBytes: MEMORY_FILE_BYTES })));
  const indexes: MemoryNoteIndex[] = [];
  for (const result of results) {
    if (result.status !== 'ok') {
      if (result.status !== 'missing') warnings.push(`${result.path} could not be read (${result.reason})`);
      continue;
    }
    warnings.push(...result.warnings);
    indexes.push(parsers.memoryNotes(result));
  }
  return rankIndexedMemoryNotes(indexes, query).map((note) => ({ source: note.source, text: note.text, brainDerived: true }));
}

async function readWorkerSources(
  brain: BrainSession,
  body: CompileRequest,
  base: Policy,
  parsers: WorkerParsers,
  defaultTimezone: string,
  warnings: string[],
): Promise<WorkerSources> {
  const identity = await readIdentity(brain, body.worker, warnings);
  const [policy, purpose, memory, zone] = await Promise.all([
    readPolicy(brain, body.worker, base, parsers, warnings),
    body.channelId === undefined ? undefined : readPurpose(brain, body.channelId, warnings),
    readMemory(brain, body.worker, body.message ?? body.task ?? '', parsers, warnings),
    readHeartbeatTimezone(brain, { requested: body.timezone, defaultTimeZone: defaultTimezone }),
  ]);
  warnings.push(...zone.warnings);
  const sources: WorkerSources = { identity, policy, memory, timezone: zone.timeZone };
  if (purpose) sources.purpose = purpose;
  return sources;
}

/** `POST /compile`: a worker's prompt for one phase of a conversation or task. */
export async function compileRoutes(app: FastifyInstance): Promise<void> {
  const basePolicy = mergePolicy(DEFAULT_POLICY, { limitChars: app.config.promptLimitChars });
  const parsers = createWorkerParsers(basePolicy);

  app.post(
    '/compile',
    {
      schema: {
        body: CompileRequestSchema,
        querystring: CompileQuerySchema,
        response: { 200: responseJsonSchema(CompiledResponseSchema) },
      },
    },
    async (request, reply) => {
      const body = request.body as CompileRequest;
      const warnings: string[] = [];
      const base: DeliveryRequest = {
        route: 'POST /compile',
        runId: runIdFor(body.runId),
        subject: { kind: 'worker' as const, id: body.worker },
        surface: body.surface,
        identifiers: { worker: body.worker, channelId: body.channelId ?? null, phase: body.phase, surface: body.surface },
        // Counts, not the items: their text is in the delivered prompt, traced once.
        options: {
          now: body.now ?? null,
          timezone: body.timezone ?? null,
          preferences: body.preferences ?? null,
          capabilities: body.capabilities?.length ?? 0,
          briefing: body.briefing?.length ?? 0,
          evidence: body.evidence?.length ?? 0,
          task: body.task !== undefined,
          message: body.message !== undefined,
        },
        warnings,
        format: (request.query as { format?: 'json' | 'text' }).format ?? 'json',
      };
      return compileAndDeliver(request, reply, base, async (brain, startedAt) => {
        const sources = await readWorkerSources(brain, body, basePolicy, parsers, app.config.defaultTimezone, warnings);
        return {
          warnings: [],
          compile: () => ({
            compiled: compile({
              subject: base.subject,
              surface: body.surface,
              phase: body.phase,
              policy: sources.policy,
              clock: { now: body.now ?? new Date(startedAt).toISOString(), timezone: sources.timezone },
              identity: sources.identity,
              ...(sources.purpose ? { purpose: sources.purpose } : {}),
              memory: sources.memory,
              ...(body.capabilities ? { capabilities: body.capabilities } : {}),
              ...(body.briefing ? { briefing: body.briefing } : {}),
              ...(body.evidence ? { evidence: body.evidence } : {}),
              ...(body.preferences ? { preferences: body.preferences } : {}),
              ...(body.task !== undefined ? { task: { source: 'request:task', text: body.task } } : {}),
              ...(body.message !== undefined ? { message: { source: 'request:message', text: body.message } } : {}),
            }),
          }),
        };
      });
    },
  );
}
