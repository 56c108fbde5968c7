import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ProblemError } from '../src/errors.js';
import { json, problems } from '../src/http/openapi.js';
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
export const runsRoutes: FastifyPluginAsyncZod<RunsRoutesOptions> = async (app, options) => {
  const freshness = options.freshness ?? app.brain;

  app.get(
    '/runs',
    {
      schema: {
        operationId: 'listRuns',
        summary: 'Traced runs, newest first, each described by its latest event',
        description: `Paginated: pass \`nextCursor\` as \`cursor\` for the next (older) page. Filters apply to
each run's latest event. Runs older than TRACE_RETENTION are not listed.`,
        querystring: RunListQuerySchema,
        response: { 200: json(RunListSchema, 'a page of runs'), ...problems(400, 401, 429, 503) },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      return app.traces.listRuns(request.query);
    },
  );

  app.get(
    '/runs/:runId/trace',
    {
      schema: {
        operationId: 'getRunTrace',
        summary: 'Every traced event of a run, in order, with the delivered prompts rebuilt and verified',
        description: `Also checks the hash chain of every trace file holding one of the run's events (and the
hand-over from and to the writer's neighbouring files): each event's \`chain\` says what its
link proves, and the run's \`chain\` reports edited, forged, inserted, removed or reordered
events and files missing or cut within retention. See docs/traces.md, "Tamper evidence".`,
        params: RunTraceParamsSchema,
        querystring: RunTraceQuerySchema,
        response: { 200: json(RunTraceSchema, "the run's events"), ...problems(400, 401, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      const { runId } = request.params;
      const { verify } = request.query;
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
};

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
