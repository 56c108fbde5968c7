import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ProblemError } from '../src/errors.js';
import { runScope } from '../src/http/auth.js';
import { attachRefreshTexts } from '../src/sources/persona/refresh.js';
import { createBlockTokens } from '../src/http/block-tokens.js';
import { O200K_BASE } from '../src/tokenizer.js';
import { json, problems } from '../src/http/openapi.js';
import type { Brain, ListingVerifyResult } from '../src/io/brain.js';
import type { TraceEventView } from '../src/io/trace/index.js';
import {
  DEFAULT_TRACE_PAGE_EVENTS,
  MAX_RUN_EVENTS,
  MAX_TRACE_PAGE_EVENTS,
  TRACE_PAGE_CHARS,
  RunListQuerySchema,
  RunListSchema,
  RunTraceParamsSchema,
  RunTraceQuerySchema,
  RunTraceSchema,
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

const count = (n: number) => n.toLocaleString('en-US');

/** `GET /runs` (newest first, paginated, filtered) and `GET /runs/:runId/trace` from `app.traces`. */
export const runsRoutes: FastifyPluginAsyncZod<RunsRoutesOptions> = async (app, options) => {
  // Each block's exact tokens, as its event's cache plan counted: one count per block beside the checkpoints'.
  const blockTokens = createBlockTokens(O200K_BASE);
  const freshness = options.freshness ?? app.brain;

  app.get(
    '/runs',
    {
      schema: {
        operationId: 'listRuns',
        summary: 'Traced runs, newest first, each described by its latest event',
        description: `Paginated: pass \`nextCursor\` as \`cursor\` for the next (older) page. Filters go together:
persona, worker, status, outcome and the time range (\`from\`, \`to\`) apply to each run's latest
event; \`runId\` picks one run; \`requestId\` and \`traceparent\` the runs holding an event of that
request or trace (found from a log line). Each run lists the minute it was compiled for, its
topic, role, engine and warnings. Served from the run index on both backends; on the files
backend a listing reads at most 64 MiB of older trace files, and says so with \`partial: true\`
and a \`nextCursor\` that searches on (docs/traces.md, "Finding a run"). Runs older than
TRACE_RETENTION are not listed. With several tokens a caller lists only its own runs
(described by its own latest event, counting its own events) unless CONTEXT_COMPILER_READ_ALL
names it (the answer's \`visibleTo\` then names whose runs are listed); a sole token, or none,
lists every run.`,
        querystring: RunListQuerySchema,
        response: { 200: json(RunListSchema, 'a page of runs'), ...problems(400, 401, 429, 503) },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      // A listing stops working once nobody waits for it: the client gone, or REQUEST_TIMEOUT passed.
      const deadline = AbortSignal.timeout(app.config.requestTimeoutMs);
      const gone = new AbortController();
      const onClose = () => {
        if (!reply.raw.writableEnded) gone.abort(new Error('the client closed the connection'));
      };
      reply.raw.once('close', onClose);
      const { visibleTo } = runScope(request);
      try {
        const list = await app.traces.listRuns({ ...request.query, visibleTo, signal: AbortSignal.any([deadline, gone.signal]) });
        // Said, so an operator reading a short list knows another caller's runs are not in it.
        return visibleTo === null ? list : { ...list, visibleTo };
      } catch (error) {
        if (deadline.aborted) {
          throw new ProblemError('CC_TRACE_UNAVAILABLE', `The listing was stopped after REQUEST_TIMEOUT (${app.config.requestTimeoutMs} ms); narrow it (a persona, a time range, a limit) or try again.`, { cause: error });
        }
        throw error;
      } finally {
        reply.raw.off('close', onClose);
      }
    },
  );

  app.get(
    '/runs/:runId/trace',
    {
      schema: {
        operationId: 'getRunTrace',
        summary: "A page of a run's traced events, in order, with the delivered prompts rebuilt and verified",
        description: `Paged: \`limit\` events (default ${DEFAULT_TRACE_PAGE_EVENTS}, at most ${MAX_TRACE_PAGE_EVENTS}; fewer once they delivered ${count(TRACE_PAGE_CHARS)}
characters), and \`nextCursor\` to pass as \`cursor\` for the next page, null on the last. A run
holds at most ${count(MAX_RUN_EVENTS)} events. Also checks the hash chain of every trace file holding one of the
page's events (and the hand-over from and to the writer's neighbouring files): each event's
\`chain\` says what its link proves, and the page's \`chain\` reports edited, forged, inserted,
removed or reordered events and files missing or cut within retention. See docs/traces.md,
"Tamper evidence".

With several tokens a caller reads only the events it appended, and another caller's run is
a 404 as an unknown one is, unless CONTEXT_COMPILER_READ_ALL names it. \`?verify=sources\` checks
the brain only for events whose chain link holds (with TRACE_SIGNING_KEY: that are signed
with it); the others say why in \`verifySkipped\`.`,
        params: RunTraceParamsSchema,
        querystring: RunTraceQuerySchema,
        response: { 200: json(RunTraceSchema, "the run's events"), ...problems(400, 401, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      const { runId } = request.params;
      const { verify, limit, cursor } = request.query;
      const run = await app.traces.readRun(runId, { limit, ...(cursor !== undefined ? { cursor } : {}), visibleTo: runScope(request).visibleTo });
      if (!run) {
        // Another caller's run reads as one that never ran: its existence is not this caller's to know.
        throw new ProblemError('CC_NOT_FOUND', `No trace for run ${runId}: it never ran here, it is older than TRACE_RETENTION, or it is not yours.`);
      }
      // Tampering shows in a read: counted, so an alert fires however the run was opened (the API, the viewer, the CLI with --url).
      if (run.chain.status === 'broken' || run.events.some((event) => event.chain === 'broken')) app.metrics.chainBreaks.inc();
      if (verify === 'sources') await markFreshness(vouchedFor(run.events, app.config.traceSigningKey !== null), freshness);
      // A refresh shows what it sent, not only its digest: rebuilt from its connect's trace and its own.
      await attachRefreshTexts((id, read) => app.traces.readRun(id, read), run.events, runScope(request).visibleTo);
      blockTokens(run.events);
      // The body holds delivered prompts: never cached by a proxy or browser.
      reply.header('cache-control', 'no-store');
      return run;
    },
  );
};

/**
 * The events whose records may drive reads of the brain: those whose chain link holds (with
 * a signing key, those signed with it), as `verified` counts them. A line the chain says was
 * forged or altered names paths nobody vouches for: it is marked, never acted on.
 */
function vouchedFor(events: TraceEventView[], signed: boolean): TraceEventView[] {
  return events.filter((event) => {
    const holds = signed ? event.chain === 'signed' : event.chain !== 'broken';
    if (!holds) {
      // Its records may be the very objects of a vouched-for event (stored once, read once): marks on those must not show here.
      if (event.sources) event.sources = event.sources.map((source) => ({ ...source }));
      if (event.absent) event.absent = event.absent.map((entry) => ({ ...entry }));
      if (event.listings) event.listings = event.listings.map((listing) => ({ ...listing }));
      event.verifySkipped = signed
        ? `its chain link is ${event.chain}, not signed with TRACE_SIGNING_KEY: its sources were not checked`
        : 'its chain link does not hold (altered or forged): its sources were not checked';
    }
    return holds;
  });
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
