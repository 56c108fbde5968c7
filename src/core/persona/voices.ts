/**
 * The voices each realtime provider speaks in, by the names its API takes (SPEC §4,
 * "Voices and providers"): what the operator's persona settings are validated against,
 * and each persona's default per provider. Azure OpenAI's realtime API takes OpenAI's
 * names. Where each list was read: docs/voice-server.md, "Provider facts".
 */

/** OpenAI Realtime's built-in voices (`audio.output.voice`); `marin` and `cedar` are the ones OpenAI recommends. */
export const OPENAI_VOICES = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'sage', 'shimmer', 'verse', 'marin', 'cedar'] as const;

/** Gemini Live's prebuilt voices (`speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName`), capitalised as the API takes them. */
export const GEMINI_VOICES = [
  'Zephyr',
  'Puck',
  'Charon',
  'Kore',
  'Fenrir',
  'Leda',
  'Orus',
  'Aoede',
  'Callirrhoe',
  'Autonoe',
  'Enceladus',
  'Iapetus',
  'Umbriel',
  'Algieba',
  'Despina',
  'Erinome',
  'Algenib',
  'Rasalgethi',
  'Laomedeia',
  'Achernar',
  'Alnilam',
  'Schedar',
  'Gacrux',
  'Pulcherrima',
  'Achird',
  'Zubenelgenubi',
  'Vindemiatrix',
  'Sadachbia',
  'Sadaltager',
  'Sulafat',
] as const;

export type OpenAIVoice = (typeof OPENAI_VOICES)[number];
export type GeminiVoice = (typeof GEMINI_VOICES)[number];

/** The voice families: `openai` also names Azure OpenAI's realtime API, which takes the same voices. */
export const VOICE_PROVIDERS = ['openai', 'gemini'] as const;
export type VoiceProvider = (typeof VOICE_PROVIDERS)[number];

export const PROVIDER_VOICES: Readonly<{ openai: readonly OpenAIVoice[]; gemini: readonly GeminiVoice[] }> = Object.freeze({
  openai: OPENAI_VOICES,
  gemini: GEMINI_VOICES,
});

/** Each built-in persona's voice per provider when the operator chooses none (SPEC §4). */
export const DEFAULT_VOICES: Readonly<Record<'mars' | 'venus', Readonly<{ openai: OpenAIVoice; gemini: GeminiVoice }>>> = Object.freeze({
  mars: Object.freeze({ openai: 'ash', gemini: 'Orus' }),
  venus: Object.freeze({ openai: 'coral', gemini: 'Aoede' }),
});

/** True when `name` is one of `provider`'s voices, spelled exactly as its API takes it. */
export function isProviderVoice(provider: VoiceProvider, name: string): boolean {
  return (PROVIDER_VOICES[provider] as readonly string[]).includes(name);
}
