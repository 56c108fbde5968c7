/**
 * `refresh()`'s answer, typed by how it reaches the model (`delivery`), so the only code that
 * compiles is code that sends the right thing:
 * - `conversation-item` (OpenAI, Azure): `event` is a `conversation.item.create`, a realtime
 *   client event — send it on the session (`rt.send(answer.event)`), for a WebRTC call on its
 *   sideband WebSocket;
 * - `client-content` (Gemini 2.x Live): `event.clientContent` is what the SDK's
 *   `live.sendClientContent()` takes (the event itself would be sent as an empty turn);
 * - `reconnect` (Gemini 3.1+ Live, which closes a session that gets client content mid-call):
 *   `setup` is the whole updated setup, to connect again with the call's
 *   `sessionResumption` handle (`liveConfig(answer.setup, sdk, { handle })`); no `event`.
 */
import { ContextCompilerError } from './errors.js';
import type { GeminiContextEvent, GeminiSetup, OpenAIContextEvent, PersonaRefresh } from './types.js';

type RefreshCommon = Omit<PersonaRefresh, 'provider' | 'delivery' | 'event' | 'setup'> & { etag: string | null };

export type ConversationItemRefresh = RefreshCommon & { provider: 'openai' | 'azure'; delivery: 'conversation-item'; event: OpenAIContextEvent };
export type ClientContentRefresh = RefreshCommon & { provider: 'gemini'; delivery: 'client-content'; event: GeminiContextEvent };
export type ReconnectRefresh = RefreshCommon & { provider: 'gemini'; delivery: 'reconnect'; event: null; setup: GeminiSetup };

/** A refresh's answer: one of the three deliveries, told apart by `delivery`. */
export type Refresh = ConversationItemRefresh | ClientContentRefresh | ReconnectRefresh;

/**
 * The service's answer as a `Refresh`, checked to be the delivery it says: an answer whose
 * members do not match its `delivery` is a `CC_CLIENT_BAD_RESPONSE`, never sent on a call.
 */
export function asRefresh(answer: PersonaRefresh & { etag: string | null }, status: number): Refresh {
  const { provider, delivery, event, setup } = answer;
  const openaiEvent = event !== null && 'type' in event;
  const geminiEvent = event !== null && 'clientContent' in event;
  if (delivery === 'conversation-item' && provider !== 'gemini' && openaiEvent && setup === undefined) return { ...answer, provider, delivery, event };
  if (delivery === 'client-content' && provider === 'gemini' && geminiEvent && setup === undefined) return { ...answer, provider, delivery, event };
  if (delivery === 'reconnect' && provider === 'gemini' && event === null && setup !== undefined) return { ...answer, provider, delivery, event, setup };
  throw new ContextCompilerError(status, 'CC_CLIENT_BAD_RESPONSE', `the refresh answer is not a ${String(delivery)} delivery for ${String(provider)}`, null);
}
