/**
 * The compiler's vocabulary. Everything here is plain data: the IO layer fills a
 * `CompileInput` from the brain and the request, `compile()` turns it into a
 * `CompiledContext`, and routes deliver and trace that.
 */
import type { RedactionCounts } from './pii.js';
import type { Clock } from './time.js';
import type { ToolDefinitionForCount } from './tokens.js';

/**
 * The most bytes any read of a brain file may take (mandatory worker files are read with
 * it, never cut). A trace records no larger bound, and verification refuses one, so a
 * forged trace cannot make the service allocate more.
 */
export const MAX_READ_BYTES = 1024 * 1024;

/** What a block is; the order here is the order blocks are laid out in. */
export const BLOCK_KINDS = [
  'identity',
  'runtime-policy',
  'blueprint',
  'persona',
  'hard-rules',
  'tools',
  'connections',
  'role',
  'capabilities',
  'purpose',
  'runtime-scope',
  'clock',
  'memory',
  'live-context',
  'topic',
  'briefing',
  'experience',
  'evidence',
  'preferences',
  'task',
  'message',
] as const;
export type BlockKind = (typeof BLOCK_KINDS)[number];

/** Who wrote a block, and so how far the model may trust it. */
export const AUTHORITIES = ['trusted-directive', 'advisory', 'content'] as const;
export type Authority = (typeof AUTHORITIES)[number];

/** How long a block stays byte-identical, most stable first. */
export const CACHE_CLASSES = ['worker-stable', 'channel-stable', 'surface-stable', 'volatile'] as const;
export type CacheClass = (typeof CACHE_CLASSES)[number];

export const SURFACES = ['voice', 'direct', 'queued-task', 'chat'] as const;
export type Surface = (typeof SURFACES)[number];

export const PHASES = ['start', 'turn'] as const;
export type Phase = (typeof PHASES)[number];

/** An engine name (`engine`): a bounded slug such as `gpt-realtime` or `claude-sonnet-4.5`, at most 64 chars. */
export const ENGINE_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** `ENGINE_PATTERN` in words, for the messages that refuse an engine. */
export const ENGINE_RULE = 'a lowercase slug ([a-z0-9] then [a-z0-9._-]), at most 64 characters, such as gpt-4.1';

export interface Block {
  kind: BlockKind;
  authority: Authority;
  cacheClass: CacheClass;
  /** Where the text came from: a brain path (`workers/scribe/identity.md`), `builtin:*` or `request:*`. */
  source: string;
  /** The text as delivered (normalised, escaped where trusted, PII-scrubbed where brain-derived). */
  content: string;
  chars: number;
  approxTokens: number;
  /** sha256 hex of `content` (UTF-8). */
  sha256: string;
}

/** One source text handed to the compiler. */
export interface SourceText {
  source: string;
  text: string;
  /** True when the text came from the brain: it is PII-scrubbed and counted in `redactions`. */
  brainDerived?: boolean;
  /** A short display title, carried beside advisory text in the input prompt (e.g. a note heading). */
  title?: string;
}

/** A tool the host lets this turn call; trusted, rendered sorted by id. */
export interface Capability {
  id: string;
  description: string;
}

/** Host state such as an open approval; advisory, optional under budget, in rank order. */
export interface BriefingItem {
  kind: string;
  id: string;
  intent: string;
  state: string;
}

/** Recalled material the host vouches only for the origin of; untrusted content. */
export interface EvidenceItem {
  sourceRef: string;
  content: string;
}

/** A lesson or past outcome the host recalls for this turn; advisory, optional under budget, in rank order. */
export interface ExperienceItem {
  sourceRef: string;
  content: string;
}

/**
 * A service a worker can act on through its tools (`workers/<w>/connections.json`). `env`
 * names the stand-in variable its tool calls carry, never a secret.
 */
export interface Connection {
  name: string;
  hosts: readonly string[];
  methods: readonly string[];
  env: string;
  usage?: string | undefined;
}

/** Presentation-only settings from a closed set; rendered as fixed text the compiler writes. */
export interface Preferences {
  length?: 'concise' | 'detailed';
  format?: 'bullets' | 'paragraphs';
  tone?: 'direct' | 'gentle';
  initiative?: 'ask-first' | 'proactive';
}

export interface Policy {
  /** Upper bound on `instructions.length` (system prompt, blank line, input prompt). */
  limitChars: number;
  /** Upper bound on the summed content chars of each kind. */
  blocks: Record<BlockKind, number>;
}

export interface Subject {
  kind: 'worker' | 'persona';
  id: string;
}

/**
 * Everything `compile()` needs. Sources are named by role; the compiler decides their
 * kind, authority, cache class and place. Absent or empty sources produce no block.
 */
export interface CompileInput {
  subject: Subject;
  surface: Surface;
  phase: Phase;
  policy: Policy;
  /** The instant and the operator's zone the date-and-time line is written for (volatile, last of the system prompt). */
  clock?: Clock;
  /** Always the first block of the system prompt. */
  identity: SourceText;
  /**
   * Defaults to the built-in runtime policy that explains the authority model; a compile
   * that gives the model tools (tools, connections or capabilities) gets its tool-use form.
   */
  runtimePolicy?: SourceText;
  /** The platform blueprint every worker shares (`platform/blueprint.md`, front matter removed). */
  blueprint?: SourceText;
  persona?: SourceText;
  hardRules?: SourceText;
  tools?: SourceText;
  /** The services the worker can act on; rendered sorted by name. No services, no block. */
  connections?: { source: string; services: readonly Connection[] };
  /** The role this run plays (`workers/<w>/roles/<id>.md`). */
  role?: SourceText;
  capabilities?: readonly Capability[];
  purpose?: SourceText;
  /** Recalled notes in rank order (best first); taken greedily while they fit. */
  memory?: readonly SourceText[];
  liveContext?: SourceText;
  topic?: SourceText;
  /** Host state in rank order; taken greedily while it fits. */
  briefing?: readonly BriefingItem[];
  /** Advisory lessons in rank order; taken greedily while they fit. */
  experiences?: readonly ExperienceItem[];
  evidence?: readonly EvidenceItem[];
  preferences?: Preferences;
  task?: SourceText;
  message?: SourceText;
  /**
   * The model or engine the prompt is for (a bounded slug, `ENGINE_PATTERN`). It enters the
   * route key only, so two engines never share one; every boundary hash stays the same.
   */
  engine?: string | undefined;
  /**
   * Tool definitions the caller sends beside the instructions (a realtime session's
   * `tools`). They are not part of the prompt text; providers cache them with it, so their
   * tokens count toward every cache boundary (docs/compiler.md, "Cache plan").
   */
  sessionTools?: readonly ToolDefinitionForCount[];
  /**
   * The provider the prompt is for (a persona's realtime API): the cache plan is judged by
   * its caching (`CACHE_RULES`). Default `openai`. Every hash and count stays the same.
   */
  provider?: CacheProvider;
}

/** The providers a cache plan can be judged for (`CACHE_RULES`): the realtime APIs a persona answers for. */
export const CACHE_PROVIDERS = ['openai', 'gemini'] as const;
export type CacheProvider = (typeof CACHE_PROVIDERS)[number];

export interface CacheBoundary {
  class: CacheClass;
  /** Kind of the last block of this class. */
  afterBlock: BlockKind;
  /** Index of that block in `blocks`. */
  blockIndex: number;
  prefixChars: number;
  /** sha256 hex of `systemPrompt.slice(0, prefixChars)`. */
  prefixSha256: string;
  approxTokens: number;
  /** Tokens of the prefix as the plan's tokenizer counts them, plus the session's tool definitions (`toolTokens`). */
  tokens: number;
  /** `tokens` is under the provider's minimum cacheable size, so caching it does nothing; null for a provider that caches nothing (Gemini Live). */
  belowMinimum: boolean | null;
}

export interface CachePlan {
  schemaVersion: number;
  /** For OpenAI `prompt_cache_key`: derived from the worker-stable prefix, the schema version and the engine. */
  routeKey: string;
  /** The engine the route key was derived for; null when the caller named none. */
  engine: string | null;
  /** What the boundaries' `tokens` were counted with: `o200k_base` in the service, `estimate` without a tokenizer. */
  tokenizer: string;
  /** The provider whose prompt caching the plan is judged by (`CACHE_RULES`): OpenAI unless the compile named another. */
  provider: CacheProvider;
  /** `prefix`: the provider caches exact prefixes of `minimumTokens` or more; `none`: it caches nothing, and no boundary is judged. */
  caching: 'prefix' | 'none';
  /** null when the provider caches nothing. */
  minimumTokens: number | null;
  /** Tokens of the session's tool definitions, counted into every boundary (0 without any). */
  toolTokens: number;
  boundaries: CacheBoundary[];
}

export interface Budget {
  limitChars: number;
  usedChars: number;
  remainingChars: number;
  /** Optional items left out because they did not fit. */
  omitted: { memory: number; briefing: number; experience: number };
  /** Per-kind content limits from the policy. */
  blocks: Record<BlockKind, number>;
}

/**
 * A piece of a prompt that every compile using it shares (a stable prefix, an input, laid
 * out once): its text, in an object a consumer can key what it derives from that text by
 * (the answer encoder keeps its JSON), for as long as the piece lives.
 */
export interface PromptPiece {
  readonly text: string;
}

/** A compile's prompts as the pieces they are joined from: the stable prefix, the volatile tail after it (the clock line), and the input. */
export interface PromptParts {
  readonly stable: PromptPiece;
  readonly tail: string;
  readonly input: PromptPiece | null;
}

export interface CompiledContext {
  blocks: Block[];
  systemPrompt: string;
  inputPrompt: string | null;
  instructions: string;
  /**
   * The prompts as rendered pieces, one per block: `system.join('') === systemPrompt` and
   * `input.join('') === (inputPrompt ?? '')`. A block renders to the same segment wherever
   * it appears, so a store can keep each distinct segment once.
   */
  segments: { system: string[]; input: string[] };
  /** How the prompts are joined from pieces a compiler shares between compiles: `systemPrompt === prompt.stable.text + prompt.tail`, `inputPrompt === prompt.input?.text ?? null`. */
  prompt: PromptParts;
  budget: Budget;
  cache: CachePlan;
  promptSha256: string;
  inputSha256: string | null;
  tokens: { total: number; byKind: Partial<Record<BlockKind, number>> };
  redactions: RedactionCounts;
  warnings: string[];
}
