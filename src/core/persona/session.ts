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
 * The session for a delivered persona prompt (SPEC §4): exactly the delivered
 * `instructions`, the persona's voice and its tools, each `{type: "function", name,
 * description, parameters}`. Pure; the tools are shared, not copied.
 */
export function realtimeSession(instructions: string, voice: string, tools: PersonaTool[]): RealtimeSession {
  return { type: 'realtime', instructions, audio: { output: { voice } }, tools };
}
