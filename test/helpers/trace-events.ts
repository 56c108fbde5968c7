import { createHash } from 'node:crypto';
import type { TraceEventInput } from '../../src/io/trace/index.js';

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** Stable pieces every persona event repeats, as a compiler would deliver them. */
export const STABLE_SYSTEM = ['### identity\n', 'You are mars, an introspective thought partner.\n', '### hard-rules\n', 'Never read PII aloud.\n'];

/** What a persona answer gives beside the prompts: one voice, the same tools object on every call. */
export const REALTIME: NonNullable<TraceEventInput['realtime']> = Object.freeze({
  voice: 'ash',
  tools: Object.freeze([
    {
      type: 'function' as const,
      name: 'search',
      description: 'Search the operator’s brain for pages about a person, company or topic.',
      parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'], additionalProperties: false },
    },
    {
      type: 'function' as const,
      name: 'read_article',
      description: 'Read an article the operator shares by link.',
      parameters: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'], additionalProperties: false },
    },
  ]),
});

export interface EventOverrides extends Partial<TraceEventInput> {
  stable?: string[];
  volatile?: string;
  input?: string[];
}

/**
 * A delivered persona event whose digests match its segments: the system prompt is the
 * stable pieces plus one volatile line, the input prompt one JSON block (or none).
 */
export function deliveredEvent(runId: string, overrides: EventOverrides = {}): TraceEventInput {
  const {
    stable = STABLE_SYSTEM,
    volatile = `### clock\nIt is ${runId}.\n`,
    input = [`{"block":"topic","authority":"advisory","text":"about ${runId}"}`],
    ...rest
  } = overrides;
  const system = [...stable, volatile];
  return {
    runId,
    at: new Date().toISOString(),
    route: '/context/mars',
    subject: { kind: 'persona', id: 'mars' },
    surface: 'voice',
    status: 200,
    outcome: 'delivered',
    request: { topicId: 'real-estate', sanitize: 'none' },
    blocks: system.map((content, i) => ({
      kind: i < 2 ? 'identity' : 'hard-rules',
      authority: 'trusted-directive',
      cacheClass: i === system.length - 1 ? 'volatile' : 'worker-stable',
      source: 'builtin:mars',
      chars: content.length,
      approxTokens: Math.ceil(Buffer.byteLength(content) / 4),
      sha256: sha256(content),
    })),
    segments: { system, input },
    promptSha256: sha256(system.join('')),
    inputSha256: input.length > 0 ? sha256(input.join('')) : null,
    budget: { limitChars: 48000, usedChars: 300, remainingChars: 47700, omitted: 0 },
    cache: { schemaVersion: 1, routeKey: 'rk-1', boundaries: [{ class: 'worker-stable', afterBlock: 3, prefixChars: 90, prefixSha256: sha256('x') }] },
    tokens: { total: 75, byKind: { identity: 20 } },
    redactions: { email: 1, phone: 0 },
    warnings: [],
    sources: [{ path: 'SOUL.md', size: 10, mtimeMs: 1, sha256: sha256('soul') }],
    timing: { compileMs: 0.4 },
    ...rest,
  };
}

/** A compile that failed: no prompt, an error, the status delivered. */
export function failedEvent(runId: string, overrides: Partial<TraceEventInput> = {}): TraceEventInput {
  return {
    runId,
    at: new Date().toISOString(),
    route: '/compile',
    subject: { kind: 'worker', id: 'scribe' },
    status: 422,
    outcome: 'failed',
    request: { worker: 'scribe', phase: 'turn' },
    error: { code: 'CC_BUDGET_EXCEEDED', status: 422, detail: 'block task is 9000 chars; its limit is 8000' },
    ...overrides,
  };
}

export { sha256 };
