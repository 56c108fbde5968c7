/**
 * The voices a persona may speak with, per realtime provider, and how the operator picks
 * one: `personas/settings.json` in the brain (validated by `PersonaSettingsFileSchema`,
 * schemas/persona-settings-file.ts) names a voice per persona and provider; anything it
 * does not name keeps the persona's built-in default. Pure data and one pure choice.
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
