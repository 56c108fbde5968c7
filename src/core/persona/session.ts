import { toAscii } from '../text.js';
import type { PersonaTool } from './tools.js';

/**
 * A realtime session's configuration as a voice server sends it at connect: to the
 * realtime calls endpoint with the SDP offer, or in `session.update`. The model is the
 * caller's to add.
 *
 * @see https://platform.openai.com/docs/api-reference/realtime-client-events/session/update
 */
export interface RealtimeSession {
  type: 'realtime';
  instructions: string;
  audio: { output: { voice: string } };
  tools: PersonaTool[];
}

/**
 * The session for a delivered persona prompt (SPEC §4): the delivered `instructions` made
 * realtime-safe ASCII (`toAscii`; realtime speech APIs have choked on em dashes and smart
 * quotes, so this holds whatever `sanitize` the prompts were asked for — unchanged when they
 * already are ASCII), the persona's voice and its tools, each `{type: "function", name,
 * description, parameters}`. Pure; the tools are shared, not copied.
 */
export function realtimeSession(instructions: string, voice: string, tools: PersonaTool[]): RealtimeSession {
  return { type: 'realtime', instructions: toAscii(instructions), audio: { output: { voice } }, tools };
}

/** Tools with realtime-safe ASCII descriptions: `tools` itself when they already are. */
export function asciiTools(tools: PersonaTool[]): PersonaTool[] {
  if (tools.every((tool) => toAscii(tool.description) === tool.description)) return tools;
  return tools.map((tool) => ({ ...tool, description: toAscii(tool.description) }));
}
