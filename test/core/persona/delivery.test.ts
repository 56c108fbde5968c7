import { describe, expect, it } from 'vitest';
import { CLIENT_CONTENT_MODELS, deliveryFor, geminiVersion, RECONNECT_MODELS } from '../../../src/core/persona/providers.js';

describe('deliveryFor: how a refresh reaches the model', () => {
  it('OpenAI and Azure: a conversation item, whatever the model', () => {
    for (const model of [undefined, 'gpt-realtime-2', 'my-azure-deployment']) {
      expect(deliveryFor('openai', model)).toEqual({ delivery: 'conversation-item', warning: null });
      expect(deliveryFor('azure', model)).toEqual({ delivery: 'conversation-item', warning: null });
    }
  });

  it('Gemini: client content for the 2.x Live models, a reconnect for 3.1 and later', () => {
    for (const model of CLIENT_CONTENT_MODELS) expect(deliveryFor('gemini', model), model).toEqual({ delivery: 'client-content', warning: null });
    for (const model of [...RECONNECT_MODELS, 'gemini-3.2-flash-live', 'gemini-4-flash-live', 'gemini-live-3.1-flash']) {
      expect(deliveryFor('gemini', model), model).toEqual({ delivery: 'reconnect', warning: null });
    }
  });

  it('Gemini, no model or an unknown one: a reconnect (every Live model takes one), with a warning', () => {
    for (const model of [undefined, 'gemini-3-flash-live', 'gemini-2.5-pro', 'some-model']) {
      const { delivery, warning } = deliveryFor('gemini', model);
      expect(delivery).toBe('reconnect');
      expect(warning).toMatch(/^delivery-model-unknown: /);
    }
  });

  it('reads a Gemini version from the name only where it is one', () => {
    expect(geminiVersion('gemini-3.1-flash-live-preview')).toEqual([3, 1]);
    expect(geminiVersion('gemini-live-2.5-flash')).toEqual([2, 5]);
    expect(geminiVersion('gemini-4-flash')).toEqual([4, 0]);
    expect(geminiVersion('gemini-1.2.3-x')).toBeNull();
    expect(geminiVersion('gemini-flash')).toBeNull();
    expect(geminiVersion('gpt-realtime-2')).toBeNull();
  });
});
