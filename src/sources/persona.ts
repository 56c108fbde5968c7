/**
 * A voice persona's sources: reads what mars, venus or a topic needs through a
 * brain reader (a per-request `BrainSession`, so the trace sees every file) and builds the
 * `CompileInput` plus the persona-only response members. No Fastify here: the HTTP routes
 * and the CLI both call it.
 *
 * Everything degrades and nothing throws for a bad brain: a missing, unsafe, binary or
 * over-size file becomes a warning and the persona still gets its prompt, and so does an
 * unusable topic id or zone. Only an unknown persona throws a `ProblemError` (404), and the
 * topic route's missing topic is a 404.
 *
 * Per request the work is a few stats (the brain revalidates its cache with one each), a
 * lookup in the persona memo (`PersonaMemo`, areas of the app's cache set) and the compile
 * (itself memoised per block). Parsed results are keyed by the identity (path and sha256)
 * of the files they came from and the local date and minute they depend on, so a repeat
 * call re-stats but does not re-parse.
 */
import type { Compiler } from '../core/compile.js';
import { deliveryFor, type AnswerProvider, type Delivery } from '../core/persona/providers.js';
import { DEFAULT_POLICY, mergePolicy } from '../core/policy.js';
import type { CompileJob } from './job.js';
import { compilePersona, NO_DAY_MEMO, readPersonaSources, type DayMemo } from './persona/day.js';
import type { PersonaRequest } from './persona/request.js';
import type { PersonaOptions, PersonaSources } from './persona/sources.js';
import { NO_REFRESH_MEMO, type RefreshMemo } from './persona/refresh.js';
import { compileTopic, readTopicSources, type TopicRequest } from './persona/topic.js';

export { compilePersona, readPersonaSources } from './persona/day.js';
export { personaOrNotFound, timezoneForTrace, topicIdForTrace, type PersonaRequest } from './persona/request.js';
export { PERSONA_READS, TOPIC_SUBJECT_ID, type PersonaCompiled, type PersonaOptions, type PersonaSources, type TopicSummary } from './persona/sources.js';
export { compileTopic, readTopicSources, TOPIC_IDENTITY, TOPIC_WARNING, type TopicRequest, type TopicSources } from './persona/topic.js';


/** What a persona's sources remember: the areas of its reading, its topic and its day, and the connects refreshed (`persona/*.ts`). */
export type PersonaMemo = DayMemo & RefreshMemo;
export const NO_PERSONA_MEMO: PersonaMemo = Object.freeze({ ...NO_DAY_MEMO, ...NO_REFRESH_MEMO });

/**
 * What the trace records beside the request: the zone the clock was read in and where it came
 * from, and how the answer's `session.instructions` were made from the traced prompts
 * (`ascii`: `toAscii` of the delivered instructions, whatever `sanitize` was).
 */
export function resolvedOptions(sources: Pick<PersonaSources, 'timeZone'>): Record<string, unknown> {
  return { operatorTimezone: sources.timeZone.timeZone, timezoneSource: sources.timeZone.source, sessionInstructions: 'ascii' };
}


/**
 * The persona options of a configuration: one definition for the persona routes, the mid-call
 * refresh (which must compile exactly as the connect did, or it would report a difference
 * that is only its own) and the CLI.
 */
export function personaOptions(config: { defaultTimezone: string; promptLimitChars: number; voiceWriteTools: boolean; voiceCrossLingual: boolean }): PersonaOptions {
  return {
    defaultTimeZone: config.defaultTimezone,
    policy: mergePolicy(DEFAULT_POLICY, { limitChars: config.promptLimitChars }),
    allowWriteTools: config.voiceWriteTools,
    crossLingual: config.voiceCrossLingual,
  };
}

/**
 * The voice personas' compile jobs, for the persona routes and the CLI: `persona`
 * for `GET /context/:persona`, `topic` for `GET /context/topic/:topicId`.
 */
export function createPersonaSources(options: PersonaOptions, deps: { compiler: Compiler; memo?: PersonaMemo }) {
  const { compiler } = deps;
  const memo = deps.memo ?? NO_PERSONA_MEMO;
  return {
    persona: (request: PersonaRequest): CompileJob => ({
      async read(brain) {
        const sources = await readPersonaSources(brain, request, options, memo);
        return { warnings: sources.warnings, resolved: resolvedOptions(sources), compile: () => compilePersona(sources, compiler, memo) };
      },
    }),
    topic: (request: TopicRequest): CompileJob => ({
      async read(brain) {
        const sources = await readTopicSources(brain, request, options, memo);
        return { warnings: sources.warnings, resolved: {}, compile: () => compileTopic(sources, compiler) };
      },
    }),
  };
}

/**
 * How a call's mid-call refreshes reach its model, for a connect or a topic: the delivery
 * `GET /context/:persona/refresh` answers for this provider and model (`deliveryFor`), which
 * the answer says (`delivery`) and the trace records, and `job` with the warning for a model
 * whose delivery is not known added to what its read warns.
 */
export function withRefreshDelivery(provider: AnswerProvider, model: string | undefined, job: CompileJob): { delivery: Delivery; job: CompileJob } {
  const { delivery, warning } = deliveryFor(provider, model);
  if (warning === null) return { delivery, job };
  return {
    delivery,
    job: {
      async read(brain) {
        const found = await job.read(brain);
        return { ...found, warnings: [...found.warnings, warning] };
      },
    },
  };
}

export type PersonaSourcesFactory = ReturnType<typeof createPersonaSources>;
