import type { FastifyInstance } from 'fastify';
import { ProblemError } from '../src/errors.js';
import { responseJsonSchema } from '../src/http/zod.js';
import type { Brain, ListingVerifyResult } from '../src/io/brain.js';
import type { TraceEventView } from '../src/io/trace/index.js';
import {
  RunListQuerySchema,
  RunListSchema,
  RunTraceParamsSchema,
  RunTraceQuerySchema,
  RunTraceSchema,
  type RunListQuery,
  type TraceAbsentView,
  type TraceListing,
  type TraceListingView,
  type TraceSource,
  type TraceSourceView,
} from '../schemas/trace.js';

/** How `?verify=sources` checks what a run relied on: the brain reader, so bounds, confinement and truncation match the original reads. */
export type FreshnessChecks = Pick<Brain, 'verify' | 'verifyAbsent' | 'verifyListing'>;

export interface RunsRoutesOptions {
  /** Defaults to `app.brain`. */
  freshness?: FreshnessChecks;
}

const VERIFY_CONCURRENCY = 8;

/** `GET /runs` (newest first, paginated, filtered) and `GET /runs/:runId/trace` from `app.traces`. */
export async function runsRoutes(app: FastifyInstance, options: RunsRoutesOptions = {}): Promise<void> {
  const freshness = options.freshness ?? app.brain;

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
      if (verify === 'sources') await markFreshness(run.events, freshness);
      // The body holds delivered prompts: never cached by a proxy or browser.
      reply.header('cache-control', 'no-store');
      return run;
    },
  );
}

/**
 * Marks, per event, every recorded file that changed or is gone, every path found missing
 * then that exists now (`appeared`), and every listing whose files differ now (`added`,
 * `removed` when the names were recorded). Each distinct check runs once per answer, at
 * most `VERIFY_CONCURRENCY` at a time.
 */
async function markFreshness(events: TraceEventView[], brain: FreshnessChecks): Promise<void> {
  const sources: TraceSourceView[] = events.flatMap((event) => event.sources ?? []);
  const absent: TraceAbsentView[] = events.flatMap((event) => event.absent ?? []);
  const listings: TraceListingView[] = events.flatMap((event) => event.listings ?? []);
  // Keyed by how the file was read: the same path read with other bounds or confinement has another answer.
  const sourceKey = (source: TraceSource) => `${source.keep ?? 'head'}:${source.maxBytes ?? ''}:${source.within ?? ''}:${source.path}`;
  const listingKey = (listing: TraceListing) => `${listing.sha256}:${listing.names === undefined ? '-' : 'names'}:${listing.path}`;
  // A check that fails leaves its answer unset: a source then counts as changed, a path as not appeared.
  const sourceNow = new Map<string, string | null>();
  const appeared = new Map<string, boolean>();
  const listingNow = new Map<string, ListingVerifyResult>();
  const checks = new Map<string, () => Promise<void>>();
  for (const source of sources) {
    checks.set(`source:${sourceKey(source)}`, async () => {
      const options: Parameters<Brain['verify']>[0] = { path: source.path, sha256: source.sha256 };
      if (source.maxBytes !== undefined) options.maxBytes = source.maxBytes;
      if (source.keep !== undefined) options.keep = source.keep;
      if (source.within !== undefined) options.within = source.within;
      const result = await brain.verify(options);
      sourceNow.set(sourceKey(source), result.status === 'changed' || result.status === 'unchanged' ? result.sha256 : null);
    });
  }
  for (const entry of absent) checks.set(`absent:${entry.path}`, async () => void appeared.set(entry.path, (await brain.verifyAbsent(entry.path)).appeared));
  for (const listing of listings) checks.set(`listing:${listingKey(listing)}`, async () => void listingNow.set(listingKey(listing), await brain.verifyListing(listing)));
  const pending = [...checks.values()];
  for (let i = 0; i < pending.length; i += VERIFY_CONCURRENCY) {
    await Promise.all(pending.slice(i, i + VERIFY_CONCURRENCY).map((check) => check().catch(() => undefined)));
  }
  for (const source of sources) {
    const now = sourceNow.get(sourceKey(source)) ?? null;
    source.currentSha256 = now;
    source.changed = now !== source.sha256;
  }
  for (const entry of absent) entry.appeared = appeared.get(entry.path) ?? false;
  for (const listing of listings) {
    const now = listingNow.get(listingKey(listing));
    listing.changed = now?.changed ?? true;
    listing.currentCount = now?.currentCount ?? null;
    listing.currentSha256 = now?.currentSha256 ?? null;
    if (now?.added !== undefined) listing.added = now.added;
    if (now?.removed !== undefined) listing.removed = now.removed;
  }
}
