/**
 * The docs' and the example's code, compiled as a voice-server developer compiles it (issue
 * 33): every ```ts block of docs/voice-server.md, and examples/voice-server.ts whole, checked
 * by the TypeScript compiler against the newest `openai` and `@google/genai` in node_modules,
 * with the project's strict options and no relaxed wire type. A snippet that sends the wrong
 * thing — the raw Gemini setup as `ai.live.connect`'s config, a refresh's event without
 * narrowing its delivery, the Gemini event itself to `sendClientContent` — does not compile.
 * Each block is a module of its own; the names a snippet takes from its surroundings
 * (`baseUrl`, `persona`, `form`, …) are declared before it with the types a voice server has.
 * Also: no snippet names a realtime model the openai SDK lists as deprecated.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config.js';

/** What the snippets take from around them: declared only where a snippet does not declare the name itself. */
const SURROUNDINGS: ReadonlyArray<[name: string, declaration: string]> = [
  ['baseUrl', 'declare const baseUrl: string;'],
  ['token', 'declare const token: string;'],
  ['apiKey', 'declare const apiKey: string;'],
  ['geminiModel', 'declare const geminiModel: string;'],
  ['persona', 'declare const persona: string;'],
  ['topicId', 'declare const topicId: string | undefined;'],
  ['callId', 'declare const callId: string;'],
  ['form', 'declare const form: FormData;'],
  ['log', 'declare const log: (fields: Record<string, unknown>) => void;'],
  ['logFallback', "declare const logFallback: (event: import('@context-compiler/client').FallbackEvent) => void;"],
  ['callbacks', "declare const callbacks: import('@google/genai').LiveCallbacks;"],
  ['createClient', "declare const createClient: typeof import('@context-compiler/client').createClient;"],
  ['GoogleGenAI', "declare const GoogleGenAI: typeof import('@google/genai').GoogleGenAI;"],
  ['compiler', "declare const compiler: ReturnType<typeof import('@context-compiler/client').createClient>;"],
];

function codeBlocks(markdown: string): string[] {
  const blocks: string[] = [];
  let current: string[] | null = null;
  for (const line of markdown.split('\n')) {
    if (current === null && line === '```ts') current = [];
    else if (current !== null && line === '```') {
      blocks.push(current.join('\n'));
      current = null;
    } else current?.push(line);
  }
  return blocks;
}

/** The names a snippet declares or imports itself (a plain word scan of our own docs). */
function declares(code: string, name: string): boolean {
  const word = `(?:^|[^A-Za-z0-9_$])${name}(?![A-Za-z0-9_$])`;
  return new RegExp(`(?:const|let|function|class)\\s+${name}(?![A-Za-z0-9_$])|import[^;]*${word}[^;]*from`).test(code);
}

function withSurroundings(code: string): string {
  const prelude = SURROUNDINGS.filter(([name]) => !declares(code, name) && new RegExp(`(?:^|[^A-Za-z0-9_$.'])${name}(?![A-Za-z0-9_$])`).test(code)).map(([, line]) => line);
  return `${prelude.join('\n')}\n${code}\nexport {};\n`;
}

/** Compiles `files` (path → text, under the project so node_modules and tsconfig paths resolve) with tsconfig.json's options; the diagnostics, one line each. */
function compile(files: Record<string, string>): string[] {
  const config = ts.getParsedCommandLineOfConfigFile(join(PROJECT_ROOT, 'tsconfig.json'), { noEmit: true, incremental: false }, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined })!;
  const host = ts.createCompilerHost(config.options);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  const getSourceFile = host.getSourceFile.bind(host);
  host.readFile = (path) => files[path] ?? readFile(path);
  host.fileExists = (path) => path in files || fileExists(path);
  host.getSourceFile = (path, language, onError, create) => (path in files ? ts.createSourceFile(path, files[path]!, language, true) : getSourceFile(path, language, onError, create));
  const program = ts.createProgram(Object.keys(files), { ...config.options, noEmit: true, incremental: false }, host);
  return Object.keys(files).flatMap((path) =>
    ts.getPreEmitDiagnostics(program, program.getSourceFile(path)).map((diagnostic) => {
      const where = diagnostic.file && diagnostic.start !== undefined ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start).line + 1 : 0;
      return `${path.slice(PROJECT_ROOT.length + 1)}:${where}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, ' ')}`;
    }),
  );
}

/** The realtime models the openai SDK documents as deprecated ("Deprecated values:" in its session types). */
function deprecatedModels(): string[] {
  const types = readFileSync(join(PROJECT_ROOT, 'node_modules/openai/resources/realtime/realtime.d.ts'), 'utf8');
  const models = new Set<string>();
  for (let at = types.indexOf('Deprecated values:'); at !== -1; at = types.indexOf('Deprecated values:', at + 1)) {
    const end = types.indexOf('*/', at);
    for (const match of types.slice(at, end).matchAll(/"([a-z0-9.-]+)"/g)) models.add(match[1]!);
  }
  return [...models];
}

const doc = readFileSync(join(PROJECT_ROOT, 'docs/voice-server.md'), 'utf8');
const example = readFileSync(join(PROJECT_ROOT, 'examples/voice-server.ts'), 'utf8');
const snippets = Object.fromEntries(codeBlocks(doc).map((code, index) => [join(PROJECT_ROOT, `test/types/voice-server-md-${index + 1}.ts`), withSurroundings(code)]));

describe('the voice-server docs and example compile against the newest SDKs', () => {
  it('every ts block of docs/voice-server.md, and examples/voice-server.ts, with no error', () => {
    expect(Object.keys(snippets).length).toBeGreaterThanOrEqual(4);
    expect(compile({ ...snippets, [join(PROJECT_ROOT, 'test/types/voice-server-example.ts')]: example })).toEqual([]);
  }, 120_000);

  it('the check can fail: the sends the issue found wrong do not compile', () => {
    const wrong = {
      rawSetup: "import { GoogleGenAI } from '@google/genai';\nconst gemini = await compiler.geminiSetup(persona);\nawait new GoogleGenAI({ apiKey }).live.connect({ model: 'm', config: gemini.setup, callbacks });",
      unnarrowed: "import type { OpenAIRealtimeWS } from 'openai/realtime/ws';\ndeclare const rt: OpenAIRealtimeWS;\nconst answer = await compiler.refresh(persona, callId);\nif (!('notModified' in answer)) rt.send(answer.event);",
      geminiEvent: "import type { Session } from '@google/genai';\ndeclare const live: Session;\nconst answer = await compiler.refresh(persona, callId);\nif (!('notModified' in answer) && answer.delivery === 'client-content') live.sendClientContent(answer.event);",
      objectSend: "declare const send: (event: object) => void;\nconst answer = await compiler.refresh(persona, callId);\nif (!('notModified' in answer)) send(answer.event);",
    };
    const files = Object.fromEntries(Object.entries(wrong).map(([label, code]) => [join(PROJECT_ROOT, `test/types/wrong-${label}.ts`), withSurroundings(code)]));
    const errors = compile(files);
    for (const label of Object.keys(wrong)) expect(errors.filter((line) => line.startsWith(`test/types/wrong-${label}.ts:`)), label).not.toEqual([]);
  }, 120_000);

  it('names no realtime model the openai SDK lists as deprecated', () => {
    const deprecated = deprecatedModels();
    expect(deprecated).toContain('gpt-realtime');
    for (const [source, text] of [['docs/voice-server.md', doc], ['examples/voice-server.ts', example]] as const) {
      const named = [...text.matchAll(/(?:model: |_MODEL \?\? )'([a-z0-9.-]+)'/g)].map((match) => match[1]!);
      expect(named.length, source).toBeGreaterThan(0);
      expect(named.filter((model) => deprecated.includes(model)), source).toEqual([]);
    }
  });
});
