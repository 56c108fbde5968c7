/**
 * The in-process compiler benchmark (the target: ≥ 50,000 compiles/s on the sources of a
 * typical request). `npm run bench` calls `measureCompilesPerSecond` (`bench/scenarios/compiler.ts`); nothing here touches
 * the file system, so the figure is the compiler's alone.
 */
import { performance } from 'node:perf_hooks';
import { createCaches } from '../src/caches.js';
import { createCompiler, DEFAULT_POLICY, type CompileInput } from '../src/core/index.js';
import { O200K_BASE } from '../src/tokenizer.js';

const IDENTITY = `You are Scribe, a careful writing assistant for Alex.

You turn rough notes into clear, short prose. You keep Alex's voice: plain words, short
sentences, no hype. When something is ambiguous you ask one question rather than guess.
You never invent facts, names or dates.

When Alex pastes a draft, you return the edited draft first and, below it, at most three
bullet points explaining the changes that matter. You never pad an answer with praise.
You may quote from the notes you are given, but you never present a guess as a quote.`;

const PURPOSE = 'General conversation with Alex: quick questions, drafting, thinking out loud.';

const NOTES = [
  ['Prefers British spelling', 'Alex writes "colour", "organise" and "centre".'],
  ['Avoid exclamation marks', 'Alex finds them noisy in work writing.'],
  ['Sign-off', 'Work emails end with "Thanks, Alex" on its own line.'],
  ['Meeting notes', 'Decisions first, then owners and dates, then open questions.'],
  ['Tone with clients', 'Warm but brief; no apologies for things that are not our fault.'],
  ['Dates', 'Write dates as 30 November 2026; never as 11/30.'],
];

/** The sources of a typical worker chat turn, in memory: identity, purpose, notes, tools, briefing. */
export function typicalCompileInput(message = 'Can you tighten this paragraph for the client update? It rambles.'): CompileInput {
  return {
    subject: { kind: 'worker', id: 'scribe' },
    surface: 'chat',
    phase: 'turn',
    policy: DEFAULT_POLICY,
    clock: { now: new Date('2026-11-30T17:20:00.000Z'), timeZone: 'Europe/London' },
    identity: { source: 'workers/scribe/identity.md', text: IDENTITY, brainDerived: true },
    purpose: { source: 'channels/general/purpose.md', text: PURPOSE, brainDerived: true },
    capabilities: [
      { id: 'docs.read', description: 'Read a shared document by id.' },
      { id: 'docs.search', description: 'Search shared documents by keyword.' },
      { id: 'calendar.read', description: "Read today's calendar." },
      { id: 'notes.recall', description: 'Recall one of your memory notes by heading.' },
    ],
    memory: NOTES.map(([heading, body], index) => ({
      source: `workers/scribe/memory/style.md#note-${index + 1}`,
      text: `## ${heading}\n${body}`,
      brainDerived: true,
    })),
    briefing: [
      { kind: 'approval', id: 'ap-17', intent: 'Send the client update to Northwind', state: 'pending' },
      { kind: 'reminder', id: 'rm-3', intent: 'Draft the Q4 summary before Friday', state: 'open' },
    ],
    preferences: { length: 'concise', format: 'paragraphs' },
    message: { source: 'request:message', text: message },
  };
}

/**
 * Compiles for about `durationMs` and returns compiles per second. Each call is a new turn:
 * the message changes every call and the clock advances one second per call, so only what
 * is really stable (identity, purpose, notes, tools) is reused.
 */
export function measureCompilesPerSecond(durationMs = 1000): number {
  const start = Date.parse('2026-11-30T17:20:00.000Z');
  const inputs = Array.from({ length: 4096 }, (_, i) => {
    const input = typicalCompileInput(`Turn ${i}: can you tighten this paragraph for the client update? It rambles a bit.`);
    input.clock = { now: new Date(start + i * 1000), timeZone: 'Europe/London' };
    return input;
  });
  // As the service runs it: one compiler, remembering in the cache set's compiler areas.
  const { compile } = createCompiler({ memo: createCaches().compiler, tokenizer: O200K_BASE });
  for (let i = 0; i < 2000; i++) compile(inputs[i % inputs.length]!); // warm up the JIT
  let count = 0;
  const began = performance.now();
  let elapsed = 0;
  do {
    for (let i = 0; i < 500; i++, count++) compile(inputs[count % inputs.length]!);
    elapsed = performance.now() - began;
  } while (elapsed < durationMs);
  return Math.round((count / elapsed) * 1000);
}
