import type { FastifyInstance } from 'fastify';
import { ProblemError } from '../src/errors.js';
import { responseJsonSchema } from '../src/http/zod.js';
import type { Brain } from '../src/io/brain.js';
import type { TraceEventView, TraceSource } from '../src/io/trace-store.js';
import {
  RunListQuerySchema,
  RunListSchema,
  RunTraceParamsSchema,
  RunTraceQuerySchema,
  RunTraceSchema,
  type RunListQuery,
} from '../schemas/trace.js';

/** The current sha256 of a recorded brain file, read the way it was read then; null when it is gone or refused. */
export type VerifySource = (source: TraceSource) => Promise<{ sha256: string } | null>;

export interface RunsRoutesOptions {
  /** How `?verify=sources` checks a recorded brain file; defaults to `app.brain.verify`. */
  verifySource?: VerifySource;
}

/** Checks a source through the brain reader, so bounds, confinement and truncation match the original read. */
export function verifyWithBrain(brain: Pick<Brain, 'verify'>): VerifySource {
  return async (source) => {
    const options: Parameters<Brain['verify']>[0] = { path: source.path, sha256: source.sha256 };
    if (source.maxBytes !== undefined) options.maxBytes = source.maxBytes;
    if (source.keep !== undefined) options.keep = source.keep;
    const result = await brain.verify(options);
    return result.status === 'changed' || result.status === 'unchanged' ? { sha256: result.sha256 } : null;
  };
}

const VERIFY_CONCURRENCY = 8;

/** `GET /runs` (newest first, paginated, filtered) and `GET /runs/:runId/trace` from `app.traces`. */
export async function runsRoutes(app: FastifyInstance, options: RunsRoutesOptions = {}): Promise<void> {
  const verifySource = options.verifySource ?? verifyWithBrain(app.brain);

  app.get(
    '/runs',
    { schema: { querystring: RunListQuerySchema, response: { 200: responseJsonSchema(RunListSchema) } } },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return app.traces.listRuns(request.query as RunListQuery);
    },
  );

  app.get(
    '/runs/:runId/trace',
    {
      schema: {
        params: RunTraceParamsSchema,
        querystring: RunTraceQuerySchema,
        response: { 200: responseJsonSchema(RunTraceSchema) },
      },
    },
    async (request, reply) => {
      const { runId } = request.params as { runId: string };
      const { verify } = request.query as { verify?: 'sources' };
      const run = await app.traces.readRun(runId);
      if (!run) {
        throw new ProblemError('CC_NOT_FOUND', `No trace for run ${runId}: it never ran here, or it is older than TRACE_RETENTION.`);
      }
      if (verify === 'sources') await markChangedSources(run.events, verifySource);
      // The body holds delivered prompts: never cached by a proxy or browser.
      reply.header('cache-control', 'no-store');
      return run;
    },
  );
}

async function markChangedSources(events: TraceEventView[], verifySource: VerifySource): Promise<void> {
  const sources: Array<TraceSource & { changed?: boolean; currentSha256?: string | null }> = events.flatMap((event) => event.sources ?? []);
  // Keyed by how the file was read: the same path read with other bounds has another digest.
  const key = (source: TraceSource) => `${source.keep ?? 'head'}:${source.maxBytes ?? ''}:${source.path}`;
  const distinct = [...new Map(sources.map((source) => [key(source), source])).values()];
  const current = new Map<string, string | null>();
  for (let i = 0; i < distinct.length; i += VERIFY_CONCURRENCY) {
    await Promise.all(
      distinct.slice(i, i + VERIFY_CONCURRENCY).map(async (source) => {
        current.set(key(source), (await verifySource(source).catch(() => null))?.sha256 ?? null);
      }),
    );
  }
  for (const source of sources) {
    const now = current.get(key(source)) ?? null;
    source.currentSha256 = now;
    source.changed = now !== source.sha256;
  }
}
