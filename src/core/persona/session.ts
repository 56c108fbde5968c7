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
 * The session for a delivered persona prompt: the delivered `instructions` made
 * realtime-safe ASCII (`toAscii`; realtime speech APIs have choked on em dashes and smart
 * quotes, so this holds whatever `sanitize` the prompts were asked for — unchanged when they
 * already are ASCII), the persona's voice and its tools, each `{type: "function", name,
 * description, parameters}`. Pure; the tools are shared, not copied.
 */
export function realtimeSession(instructions: string, voice: string, tools: PersonaTool[]): RealtimeSession {
  return { type: 'realtime', instructions: asciiInstructions(instructions), audio: { output: { voice } }, tools };
}

const NON_ASCII = /[^\u0000-\u007f]/;

/**
 * `toAscii(text)`, transliterating only from the line of the first character outside ASCII:
 * the persona's stable blocks are ASCII and come first, so a new minute's instructions cost
 * what their brain lines cost, not their whole length. Exact, because `toAscii` of an ASCII
 * prefix ending in a line break is that prefix, and nothing after a line break depends on
 * what came before it.
 */
export function asciiInstructions(text: string): string {
  if (isAscii(text)) return text;
  const first = NON_ASCII.exec(text)?.index;
  if (first === undefined) return text;
  const cut = text.lastIndexOf('\n', first) + 1;
  return cut === 0 ? toAscii(text) : text.slice(0, cut) + toAscii(text.slice(cut));
}

/** No character outside ASCII: one pass of a single-class pattern (about 6 µs for a persona's 9 KB prefix; the core imports no Buffer to count it natively). */
function isAscii(text: string): boolean {
  return !NON_ASCII.test(text);
}

/** Tools with realtime-safe ASCII descriptions: `tools` itself when they already are. */
export function asciiTools(tools: PersonaTool[]): PersonaTool[] {
  if (tools.every((tool) => toAscii(tool.description) === tool.description)) return tools;
  return tools.map((tool) => ({ ...tool, description: toAscii(tool.description) }));
}
