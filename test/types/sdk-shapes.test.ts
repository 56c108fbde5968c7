/**
 * The persona answer's realtime objects, typed against the providers' own SDKs (issue 24):
 * checked by the compiler in `npm run typecheck` (tsconfig.json includes test/), the
 * `expectTypeOf` lines being no-ops at run time. The SDKs are dev dependencies only:
 * test/layout.test.ts keeps them out of everything that ships.
 *
 * `@google/genai` types Gemini's enums (`Type`, `Modality`) as TypeScript string enums,
 * which no string literal is assignable to, although the wire carries exactly their values:
 * so the raw setup (the WebSocket's JSON) is not the SDK's `LiveConnectConfig`, and the
 * client's `liveConfig(setup, { Modality, Type })` is — checked here against the SDK's own
 * types, with no relaxed copy of them. test/types/snippets.test.ts compiles the docs' sends;
 * test/client/voice-server-refresh.test.ts reads the wire message the SDK makes of it.
 */
import type { LiveClientMessage, LiveConnectConfig, Modality, Schema, Type } from '@google/genai';
import type { RealtimeClientEvent } from 'openai/resources/realtime/realtime';
import type { LiveConfig, LiveSchema, Refresh } from '../../packages/client/src/index.js';
import type { CallAcceptParams } from 'openai/resources/realtime/calls';
import type { ClientSecretCreateParams } from 'openai/resources/realtime/client-secrets';
import type {
  ConversationItemCreateEvent,
  RealtimeFunctionTool,
  RealtimeSession as OpenAIRealtimeSessionObject,
  RealtimeSessionCreateRequest,
  SessionUpdateEvent,
} from 'openai/resources/realtime/realtime';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type { GeminiSchema, GeminiType } from '../../src/core/persona/gemini-schema.js';
import { geminiSetup, type GeminiSetup } from '../../src/core/persona/gemini-setup.js';
import { PERSONAS } from '../../src/core/persona/personas.js';
import type { OPENAI_VOICES } from '../../src/core/persona/providers.js';
import type { RealtimeSessionSchema } from '../../schemas/compiled.js';
import type { PersonaContextResponseSchema } from '../../schemas/context.js';
import { GeminiSchemaSchema, GeminiSetupSchema, type GeminiSetupAnswer } from '../../schemas/gemini.js';
import { geminiViolations } from '../helpers/gemini-schema.js';
import type { GeminiContextEvent, OpenAIContextEvent } from '../../src/core/persona/refresh.js';
import type { GeminiContextEventSchema, OpenAIContextEventSchema } from '../../schemas/refresh.js';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';

/** The literal members of a `(string & {}) | 'a' | 'b'` union: the values an SDK documents. */
type Documented<T> = T extends unknown ? (string extends T ? never : T) : never;

type Session = NonNullable<z.infer<typeof PersonaContextResponseSchema>['session']>;
type Setup = NonNullable<z.infer<typeof PersonaContextResponseSchema>['setup']>;

describe('the OpenAI session, typed by the openai SDK', () => {
  it('is a GA realtime session create request, wherever the SDK takes one', () => {
    expectTypeOf<Session>().toEqualTypeOf<z.infer<typeof RealtimeSessionSchema>>();
    expectTypeOf<Session>().toExtend<RealtimeSessionCreateRequest>();
    expectTypeOf<{ type: 'session.update'; session: Session }>().toExtend<SessionUpdateEvent>();
    expectTypeOf<Session>().toExtend<NonNullable<ClientSecretCreateParams['session']>>();
    expectTypeOf<Session>().toExtend<CallAcceptParams>();
    expectTypeOf<Session['tools'][number]>().toExtend<RealtimeFunctionTool>();
  });

  it('has the voices the SDK documents, exactly', () => {
    // Not NonNullable: intersecting with {} folds the literals into `string & {}`.
    expectTypeOf<(typeof OPENAI_VOICES)[number]>().toEqualTypeOf<Documented<Exclude<OpenAIRealtimeSessionObject['voice'], undefined>>>();
  });

  it('refuses what the SDK refuses (the checks can fail)', () => {
    expectTypeOf<{ type: 'session'; instructions: string }>().not.toExtend<RealtimeSessionCreateRequest>();
    expectTypeOf<{ type: 'realtime'; audio: { output: { voice: number } } }>().not.toExtend<RealtimeSessionCreateRequest>();
    expectTypeOf<{ type: 'realtime'; tools: Array<{ type: 'tool'; name: string }> }>().not.toExtend<RealtimeSessionCreateRequest>();
  });

  it('delivers mid-call context as a system message item, the form docs/providers.md gives', () => {
    type SystemNote = { type: 'conversation.item.create'; item: { type: 'message'; role: 'system'; content: Array<{ type: 'input_text'; text: string }> } };
    expectTypeOf<SystemNote>().toExtend<ConversationItemCreateEvent>();
    // What a refresh answers, for OpenAI and Azure.
    expectTypeOf<z.infer<typeof OpenAIContextEventSchema>>().toEqualTypeOf<OpenAIContextEvent>();
    expectTypeOf<OpenAIContextEvent>().toExtend<ConversationItemCreateEvent>();
    expectTypeOf<{ type: 'conversation.item.create'; item: { type: 'message'; role: 'narrator'; content: [] } }>().not.toExtend<ConversationItemCreateEvent>();
    // The client's refresh, narrowed to its delivery, is a realtime client event; not narrowed, it is not.
    expectTypeOf<Extract<Refresh, { delivery: 'conversation-item' }>['event']>().toExtend<RealtimeClientEvent>();
    expectTypeOf<Refresh['event']>().not.toExtend<RealtimeClientEvent>();
  });
});

describe('the Gemini setup, typed by @google/genai', () => {
  it('is, through liveConfig(), the config of ai.live.connect — the raw setup is not (the SDK types its enums)', () => {
    expectTypeOf<GeminiSetupAnswer>().toEqualTypeOf<GeminiSetup>();
    expectTypeOf<Setup>().toEqualTypeOf<GeminiSetupAnswer>();
    expectTypeOf<LiveConfig<Modality, Type>>().toExtend<LiveConnectConfig>();
    expectTypeOf<Setup>().not.toExtend<LiveConnectConfig>();
  });

  it('delivers a refresh mid-session as client content, a Live client message; a reconnect carries the whole setup', () => {
    expectTypeOf<z.infer<typeof GeminiContextEventSchema>>().toEqualTypeOf<GeminiContextEvent>();
    expectTypeOf<GeminiContextEvent>().toExtend<LiveClientMessage>();
    expectTypeOf<{ clientContent: { turns: Array<{ role: 'system'; parts: [] }> } }>().not.toExtend<GeminiContextEvent>();
    expectTypeOf<Extract<Refresh, { delivery: 'reconnect' }>['setup']>().toEqualTypeOf<Setup>();
  });

  it('declares parameters as the SDK’s Schema, with Gemini’s own type names', () => {
    expectTypeOf<z.infer<typeof GeminiSchemaSchema>>().toEqualTypeOf<GeminiSchema>();
    expectTypeOf<LiveSchema<Type>>().toExtend<Schema>();
    expectTypeOf<GeminiType>().toExtend<`${Type}`>();
    expectTypeOf<`${Type}`>().not.toExtend<GeminiType>(); // TYPE_UNSPECIFIED and NULL are never written
  });

  it('refuses what the SDK refuses (the checks can fail)', () => {
    expectTypeOf<{ type: 'object' }>().not.toExtend<Schema>();
    expectTypeOf<{ type: Type; maxLength: number }>().not.toExtend<Schema>();
    expectTypeOf<{ responseModalities: ['AUDIO'] }>().not.toExtend<LiveConnectConfig>();
    expectTypeOf<LiveConfig<'AUDIO', Type>>().not.toExtend<LiveConnectConfig>();
  });

  it('delivers mid-call context as client content that does not end the turn, the form docs/providers.md gives', () => {
    type ContextNote = { clientContent: { turns: Array<{ role: 'user'; parts: Array<{ text: string }> }>; turnComplete: false } };
    expectTypeOf<ContextNote>().toExtend<LiveClientMessage>();
    expectTypeOf<{ clientContent: { turns: Array<{ role: 'user'; parts: Array<{ text: string }> }>; turnComplete: 'no' } }>().not.toExtend<LiveClientMessage>();
  });

  it('every ?provider=gemini answer carries a setup that parses and holds to Gemini’s schema, with the session’s instructions and the Gemini voice', async () => {
    const { app } = await buildTestApp({ BRAIN_ROOT: await copyExampleBrain(), VOICE_WRITE_TOOLS: 'true' });
    for (const persona of ['mars', 'venus'] as const) {
      const openai = (await app.inject({ method: 'GET', url: `/context/${persona}?now=2026-11-30T17:05:00Z` })).json<z.infer<typeof PersonaContextResponseSchema>>();
      const response = await app.inject({ method: 'GET', url: `/context/${persona}?now=2026-11-30T17:05:00Z&provider=gemini` });
      expect(response.statusCode).toBe(200);
      const answer = response.json<z.infer<typeof PersonaContextResponseSchema>>();
      expect(answer.session).toBeUndefined();
      const setup = answer.setup!;
      expect(GeminiSetupSchema.parse(setup)).toEqual(setup);
      const voice = PERSONAS.find((entry) => entry.key === persona)!.voices.gemini;
      expect(setup).toEqual(geminiSetup(openai.session!.instructions, voice, openai.session!.tools).setup);
      expect(setup.systemInstruction.parts[0]?.text).toBe(openai.session!.instructions);
      expect(setup.tools[0]?.functionDeclarations.map((declaration) => declaration.name)).toEqual(openai.session!.tools.map((tool) => tool.name));
      for (const declaration of setup.tools[0]?.functionDeclarations ?? []) {
        if (declaration.parameters !== undefined) expect(geminiViolations(declaration.parameters), declaration.name).toEqual([]);
      }
      // The catalogue loses nothing in translation (read_article's format uri is gone), write tools included.
      expect(answer.warnings.filter((warning) => warning.startsWith('gemini-schema:'))).toEqual([]);
    }
  });
});
