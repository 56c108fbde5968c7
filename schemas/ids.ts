import { z } from 'zod';

/**
 * Identifiers that reach the file system (SPEC §3). A value that fails these patterns is
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

function unsafe(kind: string, rule: string) {
  return { message: `must be ${kind}: ${rule}, at most ${MAX_ID_LENGTH} characters`, params: { unsafeId: true } };
}

/** topicId, persona: lowercase slug. */
export const SlugSchema = z.string().refine(isSlug, unsafe('a slug', '[a-z0-9] then [a-z0-9-]'));

/** runId, worker, channelId: letters, digits, `_`, `:` and `-`. */
export const SafeIdSchema = z.string().refine(isSafeId, unsafe('a safe id', '[A-Za-z0-9_:-]'));

export const TopicIdSchema = SlugSchema;
export const PersonaIdSchema = SlugSchema;
export const RunIdSchema = SafeIdSchema;
export const WorkerIdSchema = SafeIdSchema;
export const ChannelIdSchema = SafeIdSchema;
