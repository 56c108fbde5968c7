/**
 * A Gemini setup as `@google/genai`'s `ai.live.connect({ config })` takes it, without this
 * package depending on the SDK: the flat `LiveConnectConfig` (the SDK warns on every connect
 * that `generationConfig` is deprecated; the flat members make the same wire message), with
 * the SDK's own enum values, which the caller hands in (`{ Modality, Type }` from
 * `@google/genai`), so the result is typed by them and no cast is needed.
 */
import type { GeminiSchema, GeminiSetup } from './types.js';

type GeminiTypeName = NonNullable<GeminiSchema['type']>;

/** The enums `liveConfig` writes: pass `{ Modality, Type }` as `@google/genai` exports them. */
export interface LiveEnums<M, T> {
  Modality: { AUDIO: M };
  Type: { [K in GeminiTypeName]: T };
}

/** A `GeminiSchema` with its `type` the SDK's `Type`. */
export type LiveSchema<T> = Omit<GeminiSchema, 'type' | 'properties' | 'items' | 'anyOf'> & {
  type?: T;
  properties?: Record<string, LiveSchema<T>>;
  items?: LiveSchema<T>;
  anyOf?: Array<LiveSchema<T>>;
};

/** `ai.live.connect`'s config for a setup: assignable to the SDK's `LiveConnectConfig`. */
export interface LiveConfig<M, T> {
  responseModalities: M[];
  speechConfig: GeminiSetup['generationConfig']['speechConfig'];
  systemInstruction: GeminiSetup['systemInstruction'];
  tools: Array<{ functionDeclarations: Array<{ name: string; description: string; parameters?: LiveSchema<T> }> }>;
  /** Present with `handle`: the session to resume (a reconnect continues the call's conversation). */
  sessionResumption?: { handle: string };
}

function liveSchema<T>(schema: GeminiSchema, types: LiveEnums<unknown, T>['Type']): LiveSchema<T> {
  const { type, properties, items, anyOf, ...rest } = schema;
  return {
    ...rest,
    ...(type === undefined ? {} : { type: types[type] }),
    ...(properties === undefined ? {} : { properties: Object.fromEntries(Object.entries(properties).map(([name, node]) => [name, liveSchema(node, types)])) }),
    ...(items === undefined ? {} : { items: liveSchema(items, types) }),
    ...(anyOf === undefined ? {} : { anyOf: anyOf.map((node) => liveSchema(node, types)) }),
  };
}

/**
 * `setup` (from `geminiSetup()`, or a refresh's `reconnect`) as `ai.live.connect`'s config;
 * with `resume.handle` (the last `sessionResumptionUpdate.newHandle` of the call), a reconnect
 * that continues the conversation under the setup's instructions.
 */
export function liveConfig<M, T>(setup: GeminiSetup, sdk: LiveEnums<M, T>, resume: { handle?: string | undefined } = {}): LiveConfig<M, T> {
  return {
    responseModalities: [sdk.Modality.AUDIO],
    speechConfig: structuredClone(setup.generationConfig.speechConfig),
    systemInstruction: structuredClone(setup.systemInstruction),
    tools: setup.tools.map((tool) => ({
      functionDeclarations: tool.functionDeclarations.map(({ parameters, ...declaration }) => ({ ...declaration, ...(parameters === undefined ? {} : { parameters: liveSchema(parameters, sdk.Type) }) })),
    })),
    ...(resume.handle === undefined ? {} : { sessionResumption: { handle: resume.handle } }),
  };
}
