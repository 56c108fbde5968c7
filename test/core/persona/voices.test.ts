import { describe, expect, it } from 'vitest';
import { PERSONAS } from '../../../src/core/persona/personas.js';
import { DEFAULT_VOICES, GEMINI_VOICES, isProviderVoice, OPENAI_VOICES, VOICE_PROVIDERS } from '../../../src/core/persona/voices.js';

describe('provider voices', () => {
  it('list each provider’s voices once: OpenAI Realtime’s 10, Gemini Live’s 30', () => {
    expect(new Set(OPENAI_VOICES).size).toBe(10);
    expect(new Set(GEMINI_VOICES).size).toBe(30);
    for (const name of ['Orus', 'Aoede', 'Puck', 'Charon', 'Kore', 'Fenrir', 'Leda', 'Zephyr']) expect(GEMINI_VOICES).toContain(name);
  });

  it('give every built-in persona a default voice of each provider, the OpenAI one being the voice it answers with today', () => {
    expect(Object.keys(DEFAULT_VOICES).sort()).toEqual(PERSONAS.map((persona) => persona.key).sort());
    for (const persona of PERSONAS) {
      const defaults = DEFAULT_VOICES[persona.key as keyof typeof DEFAULT_VOICES];
      expect(defaults.openai).toBe(persona.voice);
      for (const provider of VOICE_PROVIDERS) expect(isProviderVoice(provider, defaults[provider]), `${persona.key} ${provider}`).toBe(true);
    }
    expect(DEFAULT_VOICES).toEqual({ mars: { openai: 'ash', gemini: 'Orus' }, venus: { openai: 'coral', gemini: 'Aoede' } });
  });

  it('take a voice only as its provider spells it', () => {
    expect(isProviderVoice('gemini', 'Orus')).toBe(true);
    expect(isProviderVoice('gemini', 'orus')).toBe(false);
    expect(isProviderVoice('gemini', 'ash')).toBe(false);
    expect(isProviderVoice('openai', 'Ash')).toBe(false);
    expect(isProviderVoice('openai', 'constructor')).toBe(false);
  });
});
