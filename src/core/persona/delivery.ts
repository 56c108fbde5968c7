import { providerShape, type AnswerProvider } from './voices.js';

/**
 * How a mid-call refresh reaches the model, chosen by the provider and the realtime model
 * the voice server named (`?model=`); docs/providers.md lists the models and where each
 * fact was read.
 *
 * - `conversation-item`: OpenAI and Azure — a `conversation.item.create` system message,
 *   sent on the session (the sideband WebSocket for a WebRTC call);
 * - `client-content`: Gemini Live models that take `clientContent` mid-session (the 2.x Live
 *   models) — `live.sendClientContent(event.clientContent)`;
 * - `reconnect`: Gemini Live models that take `clientContent` only as the initial history
 *   and close the session with 1007 on it mid-session (3.1 and later) — the whole updated
 *   setup, sent on a new connection with the call's `sessionResumption` handle, so the
 *   conversation goes on under the new system instruction.
 */
export const DELIVERIES = ['conversation-item', 'client-content', 'reconnect'] as const;
export type Delivery = (typeof DELIVERIES)[number];

/** Gemini Live models known to take `clientContent` mid-session: the 2.0 and 2.5 Live models. */
export const CLIENT_CONTENT_MODELS: readonly string[] = [
  'gemini-2.0-flash-live-001',
  'gemini-2.0-flash-live-preview-04-09',
  'gemini-live-2.5-flash-preview',
  'gemini-live-2.5-flash',
  'gemini-live-2.5-flash-native-audio',
  'gemini-2.5-flash-preview-native-audio-dialog',
  'gemini-2.5-flash-native-audio-preview-09-2025',
  'gemini-2.5-flash-native-audio-preview-12-2025',
];

/** Gemini Live models known to refuse it (close code 1007): listed by name, and any later version by `geminiVersion`. */
export const RECONNECT_MODELS: readonly string[] = ['gemini-3.1-flash-live-preview'];

/** A realtime model name's Gemini version, `[major, minor]` (`gemini-3.1-flash-live-preview`: [3, 1]); null when it names none. */
export function geminiVersion(model: string): [number, number] | null {
  const rest = model.startsWith('gemini-live-') ? model.slice('gemini-live-'.length) : model.startsWith('gemini-') ? model.slice('gemini-'.length) : null;
  if (rest === null) return null;
  const end = rest.indexOf('-');
  const [major = '', minor = '0', extra] = (end === -1 ? rest : rest.slice(0, end)).split('.');
  return extra === undefined && /^[0-9]{1,3}$/.test(major) && /^[0-9]{1,3}$/.test(minor) ? [Number(major), Number(minor)] : null;
}

/** The delivery for `provider` and `model`, and a warning when the model is not one whose delivery is known. */
export function deliveryFor(provider: AnswerProvider, model: string | undefined): { delivery: Delivery; warning: string | null } {
  if (providerShape(provider) === 'openai') return { delivery: 'conversation-item', warning: null };
  if (model === undefined) {
    return { delivery: 'reconnect', warning: 'delivery-model-unknown: no model was named (?model=); a Gemini refresh is a reconnect, which every Live model takes' };
  }
  if (CLIENT_CONTENT_MODELS.includes(model)) return { delivery: 'client-content', warning: null };
  if (RECONNECT_MODELS.includes(model)) return { delivery: 'reconnect', warning: null };
  const version = geminiVersion(model);
  if (version !== null && (version[0] > 3 || (version[0] === 3 && version[1] >= 1))) return { delivery: 'reconnect', warning: null };
  return { delivery: 'reconnect', warning: `delivery-model-unknown: ${model} is not a Gemini Live model whose mid-session clientContent is known; a refresh is a reconnect, which every Live model takes` };
}
