/**
 * Catch-up after an outage. A call that connected on a fallback has what the client gave it —
 * the persona's static session, or the last good one (stale) — and a run id the client made
 * at connect, which holds nothing at the service. The client remembers, per such run, what
 * the call was given and the options it connected with; its first refresh names them
 * (`?baseline=`), so the service opens the call's run with everything the call misses. The
 * memory is bounded: the oldest calls are forgotten first, and a call is forgotten once a
 * refresh of it was answered (the run then holds what it was given).
 */

/** What a fallback call was given: the static session, or the stale session of the service's run `runId`. */
export type CallBaseline = { source: 'static' } | { source: 'stale'; runId: string };

/** The connect's options a catch-up tells the service, which never saw the connect. */
export interface CatchUpQuery {
  baseline: 'static' | 'stale';
  baselineRunId?: string;
  topicId?: string;
  timezone?: string;
  provider?: 'openai' | 'gemini' | 'azure';
  model?: string;
}

const TOPIC_ID = /^[a-z0-9][a-z0-9-]{0,127}$/;

/** The calls on a fallback, by run id, at most `max` of them. */
export function createCatchUps(max = 10_000) {
  const calls = new Map<string, { persona: string; query: CatchUpQuery }>();
  return {
    /** Remembers fallback call `runId` of `persona`, given `baseline`, connected with `connect`'s options. */
    remember(runId: string, persona: string, baseline: CallBaseline, connect: { topicId?: unknown; timezone?: string | undefined; provider?: CatchUpQuery['provider']; model?: string | undefined }): void {
      const query: CatchUpQuery = {
        baseline: baseline.source,
        ...(baseline.source === 'stale' ? { baselineRunId: baseline.runId } : {}),
        ...(typeof connect.topicId === 'string' && TOPIC_ID.test(connect.topicId) ? { topicId: connect.topicId } : {}),
        ...(connect.timezone === undefined ? {} : { timezone: connect.timezone }),
        ...(connect.provider === undefined ? {} : { provider: connect.provider }),
        ...(connect.model === undefined ? {} : { model: connect.model }),
      };
      calls.delete(runId);
      calls.set(runId, { persona, query });
      if (calls.size > max) calls.delete(calls.keys().next().value!);
    },
    /** The catch-up query for a refresh of `persona` in run `runId`; empty when the call connected to the service. */
    queryFor(runId: string, persona: string): Partial<CatchUpQuery> {
      const call = calls.get(runId);
      return call !== undefined && call.persona === persona ? call.query : {};
    },
    /** A refresh of `runId` was answered: its run holds the connect now. */
    forget(runId: string): void {
      calls.delete(runId);
    },
  };
}
