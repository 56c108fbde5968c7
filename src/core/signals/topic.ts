import { keepNewest, stripHtmlComments, toSingleLine } from '../text.js';

/**
 * `topics/<topicId>.md` and the `topicName` display label. Documented in
 * docs/brain-formats.md ("Topics").
 */

export const MAX_TOPIC_NAME_CHARS = 80;
export const DEFAULT_TOPIC_CHARS = 2000;

/**
 * Sanitises a caller's `topicName` (a display label from a URL): one line, control and bidi
 * characters removed, whitespace collapsed, at most 80 chars. Undefined when nothing is left.
 */
export function sanitizeTopicName(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const name = toSingleLine(raw, MAX_TOPIC_NAME_CHARS);
  return name.length > 0 ? name : undefined;
}

export interface TopicExcerpt {
  text: string;
  /** True when the file was over `maxChars` and its oldest part was dropped. */
  truncated: boolean;
}

/**
 * The part of a topic file to show: HTML comments removed, line endings normalised, and when
 * over `maxChars` the newest part (topic files grow at the end), starting at a line boundary.
 */
export function topicExcerpt(text: string, maxChars = DEFAULT_TOPIC_CHARS): TopicExcerpt {
  const clean = stripHtmlComments(text.replace(/\r\n?/g, '\n')).trim();
  if (clean.length <= maxChars) return { text: clean, truncated: false };
  return { text: keepNewest(clean, maxChars).trim(), truncated: true };
}
