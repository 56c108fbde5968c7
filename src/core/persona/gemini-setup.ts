import { toGeminiFunctionDeclarations, type GeminiFunctionDeclaration, type ToolToDeclare } from './gemini-schema.js';

/**
 * Gemini Live's session setup for a delivered persona prompt, the twin of a realtime
 * `session` (session.ts): what a voice server sends as the first message of the Live API
 * WebSocket, `{setup: {model, ...setup}}`, or passes as `config` to `@google/genai`'s
 * `ai.live.connect({model, config})`. The model is the caller's to add.
 *
 * @see https://ai.google.dev/api/live#bidigeneratecontentsetup
 */
export interface GeminiSetup {
  generationConfig: {
    responseModalities: 'AUDIO'[];
    speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: string } } };
  };
  systemInstruction: { parts: Array<{ text: string }> };
  tools: Array<{ functionDeclarations: GeminiFunctionDeclaration[] }>;
}

/** A persona's tools as a Gemini setup declares them, and what the declarations lost or left out. */
export interface DeclaredTools {
  tools: GeminiSetup['tools'];
  warnings: string[];
}

/**
 * `tools` declared in the schema Gemini takes (gemini-schema.ts): one tool of function
 * declarations, none when no tool can be declared; `warnings` lists every loss. Pure: a
 * persona's tools are declared once per version of its files and shared by every setup.
 */
export function geminiTools(tools: readonly ToolToDeclare[]): DeclaredTools {
  const { functionDeclarations, warnings } = toGeminiFunctionDeclarations(tools);
  return { tools: functionDeclarations.length === 0 ? [] : [{ functionDeclarations }], warnings };
}

/** The setup for `instructions` spoken in the prebuilt voice `voiceName`, with tools already declared (`geminiTools`). Pure; the tools are shared, not copied. */
export function geminiSetupWith(instructions: string, voiceName: string, tools: GeminiSetup['tools']): GeminiSetup {
  return {
    generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName } } } },
    systemInstruction: { parts: [{ text: instructions }] },
    tools,
  };
}

/**
 * The setup for `instructions` spoken in the prebuilt voice `voiceName`, with `tools`
 * declared in the schema Gemini takes: audio out, the instructions as the system
 * instruction, one tool of function declarations (none when no tool can be declared).
 * `warnings` lists what the declarations lost or left out. Pure.
 */
export function geminiSetup(instructions: string, voiceName: string, tools: readonly ToolToDeclare[]): { setup: GeminiSetup; warnings: string[] } {
  const declared = geminiTools(tools);
  return { setup: geminiSetupWith(instructions, voiceName, declared.tools), warnings: declared.warnings };
}
