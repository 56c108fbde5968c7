import { z } from 'zod';
import { parseInstant } from '../src/core/time.js';
import { isValidTimeZone } from '../src/core/zones.js';
import { ENGINE_PATTERN, ENGINE_RULE } from '../src/core/types.js';

/**
 * Identifiers that reach the file system (docs/brain-formats.md). A value that fails these patterns is
 * rejected with `CC_UNSAFE_ID` before any path is built from it.
 */
export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]*$/;
export const ID_PATTERN = /^[A-Za-z0-9_:-]+$/;
export const MAX_ID_LENGTH = 128;

export function isSlug(value: string): boolean {
  return value.length <= MAX_ID_LENGTH && SLUG_PATTERN.test(value);
}

export function isSafeId(value: string): boolean {
  return value.length <= MAX_ID_LENGTH && ID_PATTERN.test(value);
}

/** A caller's name (`name:token` in CONTEXT_COMPILER_TOKENS): what trace events record instead of the token. */
export const CALLER_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

export function isCallerName(value: string): boolean {
  return CALLER_NAME_PATTERN.test(value);
}

function unsafe(kind: string, rule: string) {
  return { message: `must be ${kind}: ${rule}, at most ${MAX_ID_LENGTH} characters`, params: { unsafeId: true } };
}

/** topicId, persona: lowercase slug. */
export const SlugSchema = z
  .string()
  .refine(isSlug, unsafe('a slug', '[a-z0-9] then [a-z0-9-]'))
  .meta({ pattern: SLUG_PATTERN.source, maxLength: MAX_ID_LENGTH });

/** runId, worker, channelId: letters, digits, `_`, `:` and `-`. */
export const SafeIdSchema = z
  .string()
  .refine(isSafeId, unsafe('a safe id', '[A-Za-z0-9_:-]'))
  .meta({ pattern: ID_PATTERN.source, maxLength: MAX_ID_LENGTH });

/** A worker's role (`workers/<worker>/roles/<role>.md`): a slug. */
export const RoleIdSchema = SlugSchema;

/** `engine`: the model or engine a prompt is for — a bounded slug that enters the route key only. */
export const EngineSchema = z
  .string()
  .regex(ENGINE_PATTERN, `must be ${ENGINE_RULE}`)
  .meta({
    description: 'the model or engine the prompt is for (a bounded slug such as `gpt-4.1`): it enters the route key only, so two engines never share one; boundary hashes stay the same',
    examples: ['gpt-4.1'],
  });

/** A realtime model name (`?model=`): the same bounded slug as an engine, read only to choose how a refresh is delivered. */
export const ModelSchema = z.string().regex(ENGINE_PATTERN, `must be ${ENGINE_RULE}`);

/** `?hud=1`: add the heads-up display of the files the compile read to the answer. */
export const HudFlagSchema = z
  .enum(['1', 'true', '0', 'false'])
  .optional()
  .meta({ description: '`1` (or `true`) adds `hud`, the heads-up display of every brain file the compile looked for; the trace records it either way' });

export const TopicIdSchema = SlugSchema;
export const PersonaIdSchema = SlugSchema;
export const RunIdSchema = SafeIdSchema;

/** What a refresh run's id adds to its connect's: `<runId>:refresh` holds the refreshes of one connect. */
export const REFRESH_RUN_SUFFIX = ':refresh';

/**
 * `runId` on a compile route: a run id outside the refresh runs' namespace. A run is its
 * opener's, so a caller who opened `<runId>:refresh` first would own another call's refreshes;
 * only a refresh of the connect opens it.
 */
export const CompileRunIdSchema = RunIdSchema.refine(
  (id) => !id.endsWith(REFRESH_RUN_SUFFIX),
  `must not end in ${REFRESH_RUN_SUFFIX}: a connect's refreshes are traced in <runId>${REFRESH_RUN_SUFFIX}, which only GET /context/:persona/refresh opens`,
);
export const WorkerIdSchema = SafeIdSchema;
export const ChannelIdSchema = SafeIdSchema;

/** An ISO 8601 instant with `Z` or an offset (`2026-11-30T17:20:00Z`): core's `parseInstant` is the one rule. */
export const InstantSchema = z
  .string()
  .refine((text) => parseInstant(text) !== undefined, 'must be an ISO 8601 date and time with Z or an offset, such as 2026-11-30T17:20:00Z')
  .meta({ format: 'date-time', examples: ['2026-11-30T17:20:00Z'] });

/** An IANA time zone name (or link) that `Intl` knows: core's `isValidTimeZone` is the one rule. */
export const TimeZoneSchema = z
  .string()
  .refine((name) => isValidTimeZone(name), 'must be an IANA time zone such as UTC or Europe/London')
  .meta({ examples: ['Europe/London'] });

/** `?format=`: `text` returns just the instructions as text/plain. */
export const FormatSchema = z
  .enum(['json', 'text'])
  .optional()
  .meta({ description: '`text` returns just the instructions as text/plain.', default: 'json' });
