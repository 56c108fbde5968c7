/**
 * The client package's types are printed from the service's zod schemas
 * (scripts/client-types.ts), so the package needs no zod. Two checks keep them one
 * definition: the committed file is exactly what the schemas generate, and — at compile
 * time, in `npm run typecheck` — every printed type equals the schema's `z.infer` (or
 * `z.input` for what a caller sends).
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, expectTypeOf, it } from 'vitest';
import type { z } from 'zod';
import type * as Client from '../../packages/client/src/index.js';
import { CLIENT_TYPES, CLIENT_TYPES_PATH, generateClientTypes } from '../../scripts/client-types.js';
import type { BlockSummarySchema, CachePlanSchema, CompiledResponseSchema, RealtimeSessionSchema, ToolSchema } from '../../schemas/compiled.js';
import type { CompileRequestSchema } from '../../schemas/compile.js';
import type { PersonaContextQuerySchema, PersonaContextResponseSchema, PersonaSessionResponseSchema, TopicContextQuerySchema, TopicContextResponseSchema } from '../../schemas/context.js';
import type { HealthSchema, ReadySchema } from '../../schemas/health.js';
import type { PersonasResponseSchema } from '../../schemas/personas.js';
import type { ProblemSchema } from '../../schemas/problem.js';
import type { RefreshQuerySchema, RefreshResponseSchema } from '../../schemas/refresh.js';
import type { RunListSchema, RunTraceSchema, TraceEventSchema } from '../../schemas/trace.js';

describe('client package types', () => {
  it('are what the schemas generate (run `npm run client-types` after changing a schema)', async () => {
    expect(await readFile(CLIENT_TYPES_PATH, 'utf8')).toBe(generateClientTypes());
    expect(CLIENT_TYPES.map((entry) => entry.name)).toEqual([
      'PersonaCompiled',
      'PersonaSession',
      'TopicCompiled',
      'Compiled',
      'Personas',
      'RunTrace',
      'RunList',
      'Health',
      'Ready',
      'Problem',
      'CompileRequest',
      'PersonaContextQuery',
      'TopicContextQuery',
      'PersonaRefresh',
      'RefreshQuery',
    ]);
  });

  it('equal the schemas’ own types (checked by the compiler)', () => {
    expectTypeOf<Client.PersonaCompiled>().toEqualTypeOf<z.infer<typeof PersonaContextResponseSchema>>();
    expectTypeOf<Client.PersonaSession>().toEqualTypeOf<z.infer<typeof PersonaSessionResponseSchema>>();
    expectTypeOf<Client.TopicCompiled>().toEqualTypeOf<z.infer<typeof TopicContextResponseSchema>>();
    expectTypeOf<Client.Compiled>().toEqualTypeOf<z.infer<typeof CompiledResponseSchema>>();
    expectTypeOf<Client.BlockSummary>().toEqualTypeOf<z.infer<typeof BlockSummarySchema>>();
    expectTypeOf<Client.CachePlan>().toEqualTypeOf<z.infer<typeof CachePlanSchema>>();
    expectTypeOf<Client.Tool>().toEqualTypeOf<z.infer<typeof ToolSchema>>();
    expectTypeOf<Client.RealtimeSession>().toEqualTypeOf<z.infer<typeof RealtimeSessionSchema>>();
    expectTypeOf<Client.Personas>().toEqualTypeOf<z.infer<typeof PersonasResponseSchema>>();
    expectTypeOf<Client.RunTrace>().toEqualTypeOf<z.infer<typeof RunTraceSchema>>();
    expectTypeOf<Client.TraceEvent>().toEqualTypeOf<z.infer<typeof TraceEventSchema>>();
    expectTypeOf<Client.RunList>().toEqualTypeOf<z.infer<typeof RunListSchema>>();
    expectTypeOf<Client.Health>().toEqualTypeOf<z.infer<typeof HealthSchema>>();
    expectTypeOf<Client.Ready>().toEqualTypeOf<z.infer<typeof ReadySchema>>();
    expectTypeOf<Client.Problem>().toEqualTypeOf<z.infer<typeof ProblemSchema>>();
    expectTypeOf<Client.CompileRequest>().toEqualTypeOf<z.input<typeof CompileRequestSchema>>();
    expectTypeOf<Client.PersonaContextQuery>().toEqualTypeOf<z.input<typeof PersonaContextQuerySchema>>();
    expectTypeOf<Client.TopicContextQuery>().toEqualTypeOf<z.input<typeof TopicContextQuerySchema>>();
    expectTypeOf<Client.PersonaRefresh>().toEqualTypeOf<z.infer<typeof RefreshResponseSchema>>();
    expectTypeOf<Client.RefreshQuery>().toEqualTypeOf<z.input<typeof RefreshQuerySchema>>();
  });

  it('give the common calls the answer itself, and only the conditional calls a union', () => {
    type Api = ReturnType<typeof Client.createClient>;
    expectTypeOf<Awaited<ReturnType<Api['context']>>>().toEqualTypeOf<Client.PersonaContext>();
    expectTypeOf<Awaited<ReturnType<Api['topic']>>>().toEqualTypeOf<Client.TopicContext>();
    expectTypeOf<Awaited<ReturnType<Api['compile']>>>().toEqualTypeOf<Client.CompileResult>();
    // realtimeSession() never throws: the session to send, with how it was made beside it.
    expectTypeOf<Awaited<ReturnType<Api['realtimeSession']>>>().toEqualTypeOf<Client.RealtimeSessionResult>();
    expectTypeOf<Client.RealtimeSessionResult['session']>().toEqualTypeOf<Client.RealtimeSession>();
    expectTypeOf<Awaited<ReturnType<Api['contextIfChanged']>>>().toEqualTypeOf<Client.PersonaContext | Client.NotModified>();
    expectTypeOf<Awaited<ReturnType<Api['compileIfChanged']>>>().toEqualTypeOf<Client.CompileResult | Client.NotModified>();
    expectTypeOf<Awaited<ReturnType<Api['refresh']>>>().toEqualTypeOf<Client.RefreshResult | Client.NotModified>();
    expectTypeOf<Omit<Client.RefreshOptions, 'etag' | 'requestId' | 'traceparent'>>().toExtend<Omit<z.input<typeof RefreshQuerySchema>, 'runId'>>();
    expectTypeOf<Awaited<ReturnType<Api['geminiSetup']>>['setup']>().toEqualTypeOf<Client.GeminiSetup>();
    // What the client sends is what the routes accept (`hud: true` goes out as `hud=1`).
    expectTypeOf<Omit<Client.ContextQuery, 'hud'>>().toExtend<z.input<typeof PersonaContextQuerySchema>>();
    expectTypeOf<Client.ContextQuery['hud']>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<Client.TopicQuery>().toExtend<z.input<typeof TopicContextQuerySchema>>();
  });
});
