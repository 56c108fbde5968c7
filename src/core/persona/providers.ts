/**
 * The realtime providers a persona answers for: the shape each takes (`providerShape`), the
 * voices a persona may speak with and how the operator picks one — `personas/settings.json`
 * in the brain (validated by `PersonaSettingsFileSchema`, schemas/persona-settings-file.ts)
 * names a voice per persona and provider; anything it does not name keeps the persona's
 * built-in default — and how a mid-call refresh reaches each model (`deliveryFor`). Pure
 * data and pure choices.
 */

/** The realtime APIs a persona answer is shaped for (Azure OpenAI takes OpenAI's shape). */
export const REALTIME_PROVIDERS = ['openai', 'gemini'] as const;
export type RealtimeProvider = (typeof REALTIME_PROVIDERS)[number];

/**
 * What a persona route's `provider` names: a realtime API, or `azure` — Azure OpenAI's
 * realtime API, which takes OpenAI's session with the deployment name as the model.
 */
export const ANSWER_PROVIDERS = ['openai', 'gemini', 'azure'] as const;
export type AnswerProvider = (typeof ANSWER_PROVIDERS)[number];

/** The realtime API whose shape (session or setup, voices, caching) `provider` is answered in. */
export function providerShape(provider: AnswerProvider): RealtimeProvider {
  return provider === 'azure' ? 'openai' : provider;
}

/**
 * The OpenAI Realtime API's voices (`audio.output.voice`).
 *
 * @see https://platform.openai.com/docs/guides/realtime-conversations#voice-options
 */
export const OPENAI_VOICES = ['alloy', 'ash', 'ballad', 'cedar', 'coral', 'echo', 'marin', 'sage', 'shimmer', 'verse'] as const;

/**
 * The Gemini Live API's prebuilt voices (`speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName`),
 * spelt as the API takes them.
 *
 * @see https://ai.google.dev/gemini-api/docs/speech-generation#voices
 */
export const GEMINI_VOICES = [
  'Achernar', 'Achird', 'Algenib', 'Algieba', 'Alnilam', 'Aoede', 'Autonoe', 'Callirrhoe', 'Charon', 'Despina',
  'Enceladus', 'Erinome', 'Fenrir', 'Gacrux', 'Iapetus', 'Kore', 'Laomedeia', 'Leda', 'Orus', 'Puck',
  'Pulcherrima', 'Rasalgethi', 'Sadachbia', 'Sadaltager', 'Schedar', 'Sulafat', 'Umbriel', 'Vindemiatrix', 'Zephyr', 'Zubenelgenubi',
] as const;

export const PROVIDER_VOICES: Readonly<Record<RealtimeProvider, readonly string[]>> = { openai: OPENAI_VOICES, gemini: GEMINI_VOICES };

/** A persona's voice for each provider. */
export type PersonaVoices = Readonly<Record<RealtimeProvider, string>>;

export const PERSONA_SETTINGS_FILE = 'personas/settings.json';

/** `personas/settings.json` after validation: per persona, the voice it speaks with per provider. */
export interface PersonaSettingsFile {
  personas?: Partial<Record<string, { voice?: Partial<Record<RealtimeProvider, string>> | undefined }>>;
}

/**
 * The voices `personaKey` speaks with: the settings file's choice per provider, else the
 * built-in default. The file is validated before it gets here (every voice is on its
 * provider's list), so this never fails. Deterministic.
 */
export function personaVoices(personaKey: string, defaults: PersonaVoices, settings: PersonaSettingsFile | undefined): PersonaVoices {
  const chosen = settings?.personas?.[personaKey]?.voice;
  if (chosen === undefined) return defaults;
  return { openai: chosen.openai ?? defaults.openai, gemini: chosen.gemini ?? defaults.gemini };
}

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
