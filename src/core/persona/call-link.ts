import { sanitizeTopicName } from '../signals/topic.js';

/** The topic block's source when it holds only the caller's topic name. */
export const TOPIC_NAME_SOURCE = 'request:topicName';

/**
 * What a call link with a topic name but no notes to load says (a topic name is
 * said, not dropped): one line, the name sanitised as `sanitizeTopicName` does (one line,
 * no control or bidi characters, at most 80 chars). Undefined when no name is left.
 */
export function topicNameOnlyLine(rawName: string | undefined): string | undefined {
  const name = sanitizeTopicName(rawName);
  return name === undefined ? undefined : `Called from the topic '${name}'; no notes on it yet.`;
}
