/**
 * What a persona compile reads and answers, the shapes `reading.ts`, `gather.ts`, `topic.ts`
 * and `day.ts` share: how much of each file is read (`PERSONA_READS`), under which options
 * (`PersonaOptions`), what a day's reads give a minute's compile (`PersonaSources`) and what
 * it answers (`PersonaCompiled`). What it is asked for is `request.ts`.
 */
import type { GeminiSetup } from '../../core/persona/gemini-setup.js';
import type { RenderedPersona } from '../../core/persona/render.js';
import type { AnswerProvider } from '../../core/persona/providers.js';
import type { PersonaTool } from '../../core/persona/tools.js';
import type { RedactionCounts } from '../../core/pii.js';
import type { CompiledContext, CompileInput, Policy } from '../../core/types.js';
import type { ResolvedTimeZone } from '../../core/zones.js';
import type { JobResult } from '../job.js';

/** How much of each file is read, and which end is kept when a file is bigger. */
export const PERSONA_READS = {
  override: { maxBytes: 64 * 1024, keep: 'head' },
  toolsFile: { maxBytes: 64 * 1024, keep: 'head' },
  settingsFile: { maxBytes: 64 * 1024, keep: 'head' },
  soul: { maxBytes: 64 * 1024, keep: 'head' },
  // Daily memory is append-only: its newest lines are at the end.
  daily: { maxBytes: 128 * 1024, keep: 'tail' },
  tasks: { maxBytes: 256 * 1024, keep: 'head' },
  calendar: { maxBytes: 64 * 1024, keep: 'head' },
  inbox: { maxBytes: 256 * 1024, keep: 'head' },
  meeting: { maxBytes: 64 * 1024, keep: 'head' },
  // Topic files grow at the end; the excerpt keeps the newest part too.
  topic: { maxBytes: 64 * 1024, keep: 'tail', within: 'topics' },
} as const;

export const TOPIC_SUBJECT_ID = 'topic';

export interface PersonaOptions {
  defaultTimeZone: string;
  policy: Policy;
  /** Offer write-shaped tools too (`VOICE_WRITE_TOOLS`; off unless configured). */
  allowWriteTools?: boolean;
  /** Reply in the language spoken to (`VOICE_CROSS_LINGUAL`; off unless configured). */
  crossLingual?: boolean;
}

export interface TopicSummary {
  topicId: string;
  found: boolean;
  /** Characters of the delivered topic block (0 when there is none). */
  chars: number;
  /** True when the file was over its cap and only its newest part was kept. */
  truncated: boolean;
}

export interface PersonaSources {
  input: CompileInput;
  persona: Pick<RenderedPersona, 'key' | 'name' | 'description'> & { voice: string };
  /** The realtime API the answer is for, and the shape it is answered in. */
  provider: AnswerProvider;
  /** The voice the session speaks with, for the provider: the operator's choice in `personas/settings.json`, else the built-in one. */
  voice: string;
  tools: PersonaTool[];
  /** `provider=gemini`: the tools as Gemini's setup declares them (their losses are among `warnings`). */
  geminiTools?: GeminiSetup['tools'];
  /** sha256 of `tools` as JSON. */
  toolsSha256: string;
  timeZone: ResolvedTimeZone;
  /** Redactions already made in the live context and the operator's tool descriptions (the compiler cannot see them again). */
  liveContextRedactions: RedactionCounts;
  topic: TopicSummary | null;
  /** One per degraded source or ignored option, in a fixed order; never quotes brain text. Shared: never changed. */
  warnings: readonly string[];
  /** Names everything the compile (and `extra`) depends on but the minute: with `clockKey`, equal keys compile to the same result. */
  compileKey?: string;
  /** The clock line the compile shows (minute precision). */
  clockKey?: string;
}

export interface PersonaCompiled extends JobResult {
  /** The compile with `redactions` counting the live context's too, as delivered and traced. */
  compiled: CompiledContext;
  /** Response members beyond the compile: `liveContext`, `topic`, `provider`, `voice`, `tools`, `session` or `setup` (persona routes) or `topic` alone. */
  extra: Record<string, unknown>;
}
