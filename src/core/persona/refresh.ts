import { encodeInputLine } from '../render.js';
import { toAscii } from '../text.js';
import type { BlockKind } from '../types.js';
import type { RealtimeProvider } from './providers.js';

/**
 * A mid-call refresh (issue 24): what changed in a persona's live context since the
 * connect, said as one short text, and the provider's own event that adds it to a session
 * in progress without resending the instructions (so the provider's cached prefix holds).
 * Pure: the connect's blocks come from its trace, the fresh ones from a compile.
 */

/** The input blocks a refresh compares: the live context and the topic, advisory both. */
export const REFRESHED_KINDS: readonly BlockKind[] = ['live-context', 'topic'];

/** An advisory input block as delivered: its kind, source and text. */
export interface InputBlockText {
  kind: string;
  source: string;
  text: string;
}

/** What changed in one block: its lines new since the connect, and those gone. */
export interface BlockChange {
  block: string;
  source: string;
  added: string[];
  removed: string[];
}

/**
 * The input blocks of an input prompt as the compiler encodes it, one JSON object per line
 * (`{"block","authority","source","text"}`, `encodeInputLine`); a line that is not one is
 * skipped. Linear in the prompt's length.
 */
export function parseInputPrompt(inputPrompt: string | null): InputBlockText[] {
  if (inputPrompt === null || inputPrompt === '') return [];
  const blocks: InputBlockText[] = [];
  for (const line of inputPrompt.split('\n')) {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    const { block, source, text } = (value ?? {}) as Record<string, unknown>;
    if (typeof block === 'string' && typeof source === 'string' && typeof text === 'string') blocks.push({ kind: block, source, text });
  }
  return blocks;
}

/** `lines` less one occurrence of each of `minus` (a multiset difference), in `lines`' order. */
function without(lines: readonly string[], minus: readonly string[]): string[] {
  const left = new Map<string, number>();
  for (const line of minus) left.set(line, (left.get(line) ?? 0) + 1);
  return lines.filter((line) => {
    const count = left.get(line) ?? 0;
    if (count > 0) left.set(line, count - 1);
    return count === 0;
  });
}

const linesOf = (text: string | undefined) => (text === undefined ? [] : text.split('\n').filter((line) => line.trim() !== ''));

/**
 * The lines of the live context and topic that differ between the connect and now, per
 * block in `REFRESHED_KINDS` order: lines new since, and lines no longer there. Lines are
 * compared as a multiset, so blocks whose lines only moved have no change. Deterministic.
 */
export function liveContextChanges(connected: readonly InputBlockText[], now: readonly InputBlockText[]): BlockChange[] {
  const changes: BlockChange[] = [];
  for (const kind of REFRESHED_KINDS) {
    const before = connected.find((block) => block.kind === kind);
    const after = now.find((block) => block.kind === kind);
    const [was, is] = [linesOf(before?.text), linesOf(after?.text)];
    const added = without(is, was);
    const removed = without(was, is);
    if (added.length > 0 || removed.length > 0) changes.push({ block: kind, source: (after ?? before)!.source, added, removed });
  }
  return changes;
}

/**
 * One short text for the changes, in realtime-safe ASCII: a first line saying since when
 * (with the clock line of now, as the instructions' clock went stale), then each changed
 * block as the input encodes it — one JSON object per line, advisory, so no brain line can
 * pose as an instruction or a label — holding only the lines new (`New:`) and gone (`No
 * longer:`). Null when nothing changed.
 */
export function refreshText(changes: readonly BlockChange[], clock: string): string | null {
  if (changes.length === 0) return null;
  const lines = [toAscii(`Since we connected, the live context changed. ${clock}`.trim())];
  for (const change of changes) {
    const parts = [...(change.added.length > 0 ? ['New:', ...change.added] : []), ...(change.removed.length > 0 ? ['No longer:', ...change.removed] : [])];
    lines.push(encodeInputLine(change.block as BlockKind, 'advisory', change.source, toAscii(parts.join('\n'))));
  }
  return lines.join('\n');
}

/**
 * OpenAI Realtime's (and Azure's) mid-session context: a system message item, which adds
 * context without resending `instructions` and without asking for a response.
 *
 * @see https://platform.openai.com/docs/api-reference/realtime-client-events/conversation/item/create
 */
export interface OpenAIContextEvent {
  type: 'conversation.item.create';
  item: { type: 'message'; role: 'system'; content: Array<{ type: 'input_text'; text: string }> };
}

/**
 * Gemini Live's: client content that does not end the turn (Gemini's turns have no system
 * role). Send it between turns: it interrupts a generation in progress.
 *
 * @see https://ai.google.dev/api/live#bidigeneratecontentclientcontent
 */
export interface GeminiContextEvent {
  clientContent: { turns: Array<{ role: 'user'; parts: Array<{ text: string }> }>; turnComplete: false };
}

/** The event that delivers `text` to a session in progress, in `provider`'s form (docs/providers.md). */
export function contextEvent(provider: RealtimeProvider, text: string): OpenAIContextEvent | GeminiContextEvent {
  if (provider === 'gemini') return { clientContent: { turns: [{ role: 'user', parts: [{ text }] }], turnComplete: false } };
  return { type: 'conversation.item.create', item: { type: 'message', role: 'system', content: [{ type: 'input_text', text }] } };
}
