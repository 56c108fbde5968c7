import { ProblemError } from '../errors.js';
import { CACHE_RULES, countLabelled, planCache, planPrefix, type PieceTokens, type PlannedPrefix, type PlannedSegment, type PlanTokens } from './cache-plan.js';
import { PrefixHasher, sha256Hex, type PrefixStates } from './digest.js';
import { noMemo, type Memo } from './memo.js';
import { addCounts, NO_REDACTIONS, scrubPii, type RedactionCounts } from './pii.js';
import { encodeInputLine, escapeTrusted, labelLine, normaliseText, singleLine, stripBidi } from './render.js';
import { preferencesText, RUNTIME_POLICY, RUNTIME_POLICY_SOURCE, RUNTIME_POLICY_TOOL_USE, RUNTIME_POLICY_TOOL_USE_SOURCE, RUNTIME_SCOPES } from './surfaces.js';
import { clockLine, clockLineCuts, isValidTimeZone, NO_TIME_MEMO, type Clock, type TimeMemo } from './time.js';
import { approxTokens, ESTIMATE_COUNTER, type TokenCounter } from './tokens.js';
import {
  ENGINE_PATTERN,
  ENGINE_RULE,
  type Authority,
  type Block,
  type BlockKind,
  type BriefingItem,
  type Budget,
  type CacheClass,
  type CachePlan,
  type Capability,
  type CompiledContext,
  type CompileInput,
  type Connection,
  type Phase,
  type Policy,
  type PromptPiece,
  type SourceText,
} from './types.js';

interface Placement {
  authority: Authority;
  cacheClass: CacheClass;
  inSystem: boolean;
}

const trusted = (cacheClass: CacheClass): Placement => ({ authority: 'trusted-directive', cacheClass, inSystem: true });
const advisory: Placement = { authority: 'advisory', cacheClass: 'volatile', inSystem: false };
const content: Placement = { authority: 'content', cacheClass: 'volatile', inSystem: false };

/** Where each kind goes. System-prompt kinds appear in BLOCK_KINDS order, which is also cache-class order. */
export const PLACEMENT: Readonly<Record<BlockKind, Placement>> = Object.freeze({
  identity: trusted('worker-stable'),
  'runtime-policy': trusted('worker-stable'),
  blueprint: trusted('worker-stable'),
  persona: trusted('worker-stable'),
  'hard-rules': trusted('worker-stable'),
  tools: trusted('worker-stable'),
  connections: trusted('worker-stable'),
  role: trusted('worker-stable'),
  capabilities: trusted('worker-stable'),
  purpose: trusted('channel-stable'),
  'runtime-scope': trusted('surface-stable'),
  clock: trusted('volatile'),
  memory: advisory,
  'live-context': advisory,
  topic: advisory,
  briefing: advisory,
  experience: advisory,
  evidence: content,
  preferences: advisory,
  task: content,
  message: content,
});

/** A block with its rendered segment; immutable and shared between calls through the memo. */
export interface PreparedBlock {
  readonly kind: BlockKind;
  readonly source: string;
  readonly content: string;
  readonly sha256: string;
  readonly approxTokens: number;
  readonly segment: string;
  /** Set for recurring (memoised) blocks: stands for exactly the segment, so the hash state after it is reused. */
  readonly key: string | undefined;
  /** Set for recurring blocks: names the block completely (its key and the redactions its source needed), for the parts memo. */
  readonly ident: string | undefined;
  readonly segmentTokens: number;
  /** PII its source needed redacted (brain-derived text only). */
  readonly redactions: Readonly<RedactionCounts>;
  /** The clock's: its segment's tokens by the compiler's tokenizer (kept with the block, a minute's). */
  readonly tokens?: PieceTokens;
}

/** One rendering of a source text: which kind, source and provenance it was rendered for, and the block (null when empty). */
export interface PreparedVariant {
  readonly kind: BlockKind;
  readonly source: string;
  readonly brainDerived: boolean;
  readonly block: PreparedBlock | null;
}

/**
 * What a compiler may remember between compiles, owned and bounded by the caller (the
 * service's cache set): rendered blocks by source text, the hash state after each stable
 * prefix, the laid-out stable prefix and input of a set of blocks (by `partKey`), route keys
 * by worker-stable digest, and the clock's formatters. A compile's bytes never depend on
 * what was kept.
 */
export interface CompilerMemo {
  readonly blocks: Memo<string, readonly PreparedVariant[]>;
  readonly prefixes: Memo<string, PrefixStates>;
  /** The stable prefix of a set of system blocks, laid out, planned and hashed once: by `partKey`. */
  readonly stableParts: Memo<string, StablePart>;
  /** The input prompt of a set of input blocks: by `partKey`. */
  readonly inputParts: Memo<string, InputPart>;
  readonly routeKeys: Memo<string, string>;
  readonly time: TimeMemo;
  /** Token counts of system-prompt pieces (the cache plan's `tokens`): a stable block's by its digest key, the clock's label and line pieces (day, ` HH:MM`, zone) by their text. */
  readonly tokens?: Memo<string, PieceTokens>;
  /**
   * Rendered clock blocks by their line, a few minutes' worth: compiles within a minute render
   * it once. Not a recurring block: no hash state is kept after it, so a new minute on every
   * compile leaves nothing behind but this small area's entries.
   */
  readonly clocks?: Memo<string, PreparedBlock>;
  /** Token counts of session tool definitions, by the (never mutated) array they came in, and the tokenizer that counted them. */
  readonly toolTokens?: Memo<object, ToolTokens>;
}

export const NO_COMPILER_MEMO: CompilerMemo = Object.freeze({
  blocks: noMemo<string, readonly PreparedVariant[]>(),
  prefixes: noMemo<string, PrefixStates>(),
  stableParts: noMemo<string, StablePart>(),
  inputParts: noMemo<string, InputPart>(),
  routeKeys: noMemo<string, string>(),
  time: NO_TIME_MEMO,
  tokens: noMemo<string, PieceTokens>(),
  clocks: noMemo<string, PreparedBlock>(),
  toolTokens: noMemo<object, ToolTokens>(),
});

/** A compiler bound to a memo: `compile` as below, with stable blocks and prefix hashes remembered in `memo`. */
export interface Compiler {
  compile(input: CompileInput): CompiledContext;
}

/** Different renderings of one text kept at once (the same text as another kind or source). */
const MAX_VARIANTS = 4;

function render(kind: BlockKind, rawSource: string, text: string, brainDerived: boolean, recurring: boolean): PreparedBlock | null {
  const placement = PLACEMENT[kind];
  // No bidi control reaches a prompt, from the brain or a caller, in a block's text or its source.
  const source = stripBidi(rawSource);
  let body = placement.inSystem || placement.authority === 'advisory' || brainDerived ? normaliseText(text) : stripBidi(text);
  let redactions: Readonly<RedactionCounts> = NO_REDACTIONS;
  if (brainDerived) {
    const scrubbed = scrubPii(body);
    body = scrubbed.text;
    redactions = scrubbed.counts;
  }
  if (placement.inSystem) body = escapeTrusted(body);
  if (body.length === 0 || (!placement.inSystem && body.trim().length === 0)) return null;
  let segment: string;
  if (placement.inSystem) {
    // Identity is always first; every later block carries the blank line that separates it.
    const labelled = `${labelLine(kind, placement.authority, source)}\n${body}`;
    segment = kind === 'identity' ? labelled : `\n\n${labelled}`;
  } else {
    segment = `${encodeInputLine(kind, placement.authority, source, body)}\n`;
  }
  const sha256 = sha256Hex(body);
  // The segment is a function of kind, source and content: the digest names the content.
  const key = recurring ? `${sha256}:${kind}:${source}` : undefined;
  return {
    kind,
    source,
    content: body,
    sha256,
    approxTokens: approxTokens(body),
    segment,
    key,
    ident: key === undefined ? undefined : `${key}:${redactions.email}:${redactions.phone}`,
    segmentTokens: approxTokens(segment),
    redactions,
  };
}

/** `render`, remembered by source text (then kind, source and provenance): stable blocks cost one lookup per call. */
function prepare(memo: CompilerMemo, kind: BlockKind, source: SourceText | undefined, memoize = true): PreparedBlock | null {
  if (!source) return null;
  const brainDerived = source.brainDerived === true;
  if (!memoize) return render(kind, source.source, source.text, brainDerived, false);
  const variants = memo.blocks.get(source.text);
  if (variants !== undefined) {
    for (const variant of variants) {
      if (variant.kind === kind && variant.source === source.source && variant.brainDerived === brainDerived) return variant.block;
    }
  }
  const block = render(kind, source.source, source.text, brainDerived, true);
  const kept = variants === undefined ? [] : variants.slice(-(MAX_VARIANTS - 1));
  // The key, the normalised content and the rendered segment: about three copies of the text.
  memo.blocks.set(source.text, [...kept, { kind, source: source.source, brainDerived, block }], 6 * source.text.length + 256);
  return block;
}

/**
 * The clock block of `line`, rendered once per minute while the small `clocks` area keeps it;
 * never a recurring block (no key). A new minute is derived from the day's template (the
 * block of the first minute seen with the same day and zone) when rendering left that line
 * as it was: the two lines differ only in four ASCII digits, which rendering never changes
 * and no marker, control or pair holds, so the new line renders as itself too, with the
 * same label and the same estimates (the same bytes, no pipe or fence among them). Only its
 * digest and its exact token count are new; the count is kept with the block, so the
 * minute's later compiles count nothing.
 */
function clockBlock(memo: CompilerMemo, line: string, tokenizer: TokenCounter): PreparedBlock | null {
  const clocks = memo.clocks;
  if (clocks === undefined) return render('clock', 'builtin:clock', line, false, false);
  const known = clocks.get(line);
  if (known !== undefined && known.tokens?.tokenizer === tokenizer.name) return known;
  const cuts = clockLineCuts(line);
  // A template's key: the line without its four digits, after a NUL no clock line starts with.
  const day = cuts === undefined ? undefined : `\0${line.slice(0, cuts.time)}${line.slice(cuts.zone)}`;
  const template = day === undefined ? undefined : clocks.get(day);
  const rendered = template !== undefined ? null : render('clock', 'builtin:clock', line, false, false);
  if (template === undefined && rendered === null) return null;
  const segment = template === undefined ? rendered!.segment : template.segment.slice(0, template.segment.length - line.length) + line;
  // Counted with the block, as the cache plan counts an unkeyed segment alone (never first: identity is), so the minute's compiles count nothing.
  const tokens: PieceTokens = { tokenizer: tokenizer.name, alone: countLabelled(segment.slice(2), tokenizer, memo.tokens ?? NO_COMPILER_MEMO.tokens!) };
  const block: PreparedBlock = template !== undefined ? { ...template, content: line, sha256: sha256Hex(line), segment, tokens } : { ...rendered!, tokens };
  if (rendered !== null && day !== undefined && rendered.content === line && rendered.segment.endsWith(line)) clocks.set(day, block, 4 * segment.length + 512);
  clocks.set(line, block, 4 * segment.length + 512);
  return block;
}

/** The volatile date-and-time line, or a 400 problem naming the field that cannot give one. */
function clockText(clock: Clock, memo: TimeMemo): string {
  if (!(clock.now instanceof Date) || Number.isNaN(clock.now.getTime())) {
    throw new ProblemError('CC_VALIDATION_FAILED', 'now must be an ISO 8601 date and time with Z or an offset, such as 2026-11-30T17:20:00Z.', {
      errors: [{ path: '/now', message: 'not an ISO 8601 date-time' }],
    });
  }
  if (!isValidTimeZone(clock.timeZone, memo)) {
    throw new ProblemError('CC_VALIDATION_FAILED', 'timezone must be an IANA time zone such as UTC or Europe/London.', {
      errors: [{ path: '/timezone', message: 'unknown time zone' }],
    });
  }
  return clockLine(clock.now, clock.timeZone, memo);
}

function capabilitiesText(capabilities: readonly Capability[] | undefined): string {
  if (!capabilities || capabilities.length === 0) return '';
  const lines = capabilities
    .map((capability) => ({ id: singleLine(capability.id, 128), description: singleLine(capability.description, 1000) }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.description < b.description ? -1 : a.description > b.description ? 1 : 0))
    .map(({ id, description }) => (description ? `- ${id}: ${description}` : `- ${id}`));
  return `Tools you may call in this turn:\n${lines.join('\n')}`;
}

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The connections block: each service by name with its hosts, methods and stand-in
 * variable, sorted by name (hosts sorted, methods in a fixed order) so the order of the
 * file does not change the prompt. Empty for no services: no block beats an empty promise.
 */
export function connectionsText(services: readonly Connection[] | undefined): string {
  if (!services || services.length === 0) return '';
  const lines = services
    .map((service) => ({ service, name: singleLine(service.name, 64) }))
    .sort((a, b) => byText(a.name, b.name))
    .map(({ service, name }) => {
      const hosts = service.hosts.map((host) => singleLine(host, 253)).sort(byText);
      const rank = (method: string) => (METHOD_ORDER.includes(method) ? METHOD_ORDER.indexOf(method) : METHOD_ORDER.length);
      const methods = service.methods.map((method) => singleLine(method, 16)).sort((a, b) => rank(a) - rank(b) || byText(a, b));
      const usage = service.usage === undefined ? '' : singleLine(service.usage, 500);
      return `- ${name}: hosts ${hosts.join(', ')}; methods ${methods.join(', ')}; env ${singleLine(service.env, 64)}${usage ? `. Use: ${usage}` : ''}`;
    });
  return (
    'Services you can act on through your tools, and nothing else. A call to one of them carries the environment ' +
    'variable named here, which stands in for its credential: you never see, need or ask for the credential itself.\n' +
    lines.join('\n')
  );
}

function briefingText(item: BriefingItem): string {
  return `${singleLine(item.kind, 64)} ${singleLine(item.id, 128)} [${singleLine(item.state, 64)}]: ${singleLine(item.intent, 2000)}`;
}

function budgetExceeded(kind: BlockKind | 'instructions', chars: number, limit: number, detail: string): ProblemError {
  return new ProblemError('CC_BUDGET_EXCEEDED', detail, { extensions: { block: kind, chars, limit } });
}

/**
 * The 422 for mandatory blocks over the prompt limit. It names what to shorten by kind
 * totals, largest first: twenty evidence items of 1,900 chars are the thing to cut, not
 * the one task that is the largest single block.
 */
function overLimit(used: number, limit: number, blocks: readonly PreparedBlock[]): ProblemError {
  const byKind = new Map<BlockKind, { chars: number; blocks: number }>();
  for (const prepared of blocks) {
    const total = byKind.get(prepared.kind) ?? { chars: 0, blocks: 0 };
    total.chars += prepared.segment.length;
    total.blocks++;
    byKind.set(prepared.kind, total);
  }
  // Stable: equal totals keep layout order.
  const ranked = [...byKind.entries()].sort((a, b) => b[1].chars - a[1].chars);
  const shown = ranked
    .slice(0, 3)
    .map(([kind, total]) => `${kind} ${total.chars} chars${total.blocks > 1 ? ` in ${total.blocks} blocks` : ''}`);
  const [largest] = ranked[0]!;
  return new ProblemError(
    'CC_BUDGET_EXCEEDED',
    `The mandatory blocks need ${used} chars; the prompt limit is ${limit}. Shorten ${largest} first: by kind, ${shown.join(', ')}.`,
    { extensions: { block: 'instructions', chars: used, limit, largestKind: largest, byKind: Object.fromEntries(ranked.map(([kind, total]) => [kind, total.chars])) } },
  );
}

/**
 * The phase rules: `start` may carry a task but no message; `turn` carries exactly
 * one message and no task. Each broken rule names its field; the request schema reports
 * them all, `compile` throws the first.
 */
export function phaseIssues(input: { phase: Phase; task?: unknown; message?: unknown }): Array<{ field: 'message' | 'task'; message: string }> {
  const issues: Array<{ field: 'message' | 'task'; message: string }> = [];
  if (input.phase === 'start' && input.message !== undefined) issues.push({ field: 'message', message: 'phase "start" may not carry a message' });
  if (input.phase === 'turn') {
    if (input.message === undefined) issues.push({ field: 'message', message: 'phase "turn" needs exactly one message' });
    if (input.task !== undefined) issues.push({ field: 'task', message: 'phase "turn" may not carry a task' });
  }
  return issues;
}

function checkPhase(input: CompileInput): void {
  const [issue] = phaseIssues(input);
  if (issue === undefined) return;
  const path = `/${issue.field}`;
  throw new ProblemError('CC_VALIDATION_FAILED', `${path}: ${issue.message}`, { errors: [{ path, message: issue.message }] });
}

/**
 * Compiles sources into the exact prompts a model is given. Pure and deterministic: equal
 * inputs give byte-identical output. Identity is always the first block; system blocks
 * follow in cache-class order; advisory and content text is encoded one JSON object per
 * line so it can never forge a label. Mandatory content over its limit throws
 * `CC_BUDGET_EXCEEDED` (never truncated); briefing items, experiences and memory notes
 * are taken in rank order while they fit, so `budget.usedChars <= budget.limitChars` always holds.
 * Stateless: nothing is remembered between calls (see `createCompiler`).
 */
export function compile(input: CompileInput): CompiledContext {
  return compileWith(NO_COMPILER_MEMO, ESTIMATE_COUNTER, input);
}

/**
 * A compiler that remembers rendered blocks, stable prefix hashes and token counts in
 * `memo`, which the caller owns and bounds: byte for byte what `compile` returns, faster on
 * recurring inputs. `tokenizer` counts the cache plan's tokens (default: the estimate); the
 * service passes o200k_base.
 */
export function createCompiler(options: { memo?: CompilerMemo; tokenizer?: TokenCounter } = {}): Compiler {
  const memo = options.memo ?? NO_COMPILER_MEMO;
  const tokenizer = options.tokenizer ?? ESTIMATE_COUNTER;
  return { compile: (input) => compileWith(memo, tokenizer, input) };
}

/** A count of tool definitions, and the tokenizer it is by (a memo may be shared by compilers that count otherwise). */
export interface ToolTokens {
  readonly tokenizer: string;
  readonly count: number;
}

/** Tokens of the session's tool definitions, remembered by the array they came in (callers never mutate it). */
function sessionToolTokens(memo: CompilerMemo, tokenizer: TokenCounter, tools: CompileInput['sessionTools']): number {
  if (tools === undefined || tools.length === 0) return 0;
  const remembered = memo.toolTokens?.get(tools);
  if (remembered !== undefined && remembered.tokenizer === tokenizer.name) return remembered.count;
  const count = tokenizer.countTools(tools);
  memo.toolTokens?.set(tools, { tokenizer: tokenizer.name, count }, 96);
  return count;
}

function compileWith(memo: CompilerMemo, tokenizer: TokenCounter, input: CompileInput): CompiledContext {
  checkPhase(input);
  const warnings: string[] = [];
  const { system, engine } = systemBlocks(memo, tokenizer, input, warnings);
  const { inputs, omitted } = inputBlocks(memo, input, system, warnings);
  return assemble(memo, tokenizer, input, { system, inputs, engine, omitted, warnings });
}

/** The system blocks in layout order (which is also cache-class order), and the engine checked; a 400 or 422 for what cannot give them. */
function systemBlocks(memo: CompilerMemo, tokenizer: TokenCounter, input: CompileInput, warnings: string[]): { system: PreparedBlock[]; engine: string | null } {
  const identity = prepare(memo, 'identity', input.identity);
  if (!identity) {
    throw new ProblemError('CC_UNPROCESSABLE', `The identity (${input.identity.source}) is empty; write who the ${input.subject.kind} is there.`, {
      extensions: { block: 'identity' },
    });
  }
  if (RUNTIME_SCOPES[input.surface] === undefined) {
    throw new ProblemError('CC_VALIDATION_FAILED', `surface must be one of ${Object.keys(RUNTIME_SCOPES).join(', ')}.`, {
      errors: [{ path: '/surface', message: 'unknown surface' }],
    });
  }
  const engine = input.engine ?? null;
  if (engine !== null && !ENGINE_PATTERN.test(engine)) {
    throw new ProblemError('CC_VALIDATION_FAILED', `engine must be ${ENGINE_RULE}.`, {
      errors: [{ path: '/engine', message: 'not an engine slug' }],
    });
  }
  const tools = prepare(memo, 'tools', input.tools);
  const connectionsSource = connectionsText(input.connections?.services);
  const connections = connectionsSource ? prepare(memo, 'connections', { source: input.connections!.source, text: connectionsSource, brainDerived: true }) : null;
  const capabilities = capabilitiesText(input.capabilities);
  const toolUse = tools !== null || connections !== null || capabilities !== '';
  const system: PreparedBlock[] = [identity];
  const pushSystem = (prepared: PreparedBlock | null) => {
    if (prepared) system.push(prepared);
  };
  pushSystem(prepare(memo, 'runtime-policy', input.runtimePolicy ?? (toolUse ? BUILTIN_RUNTIME_POLICY_TOOL_USE : BUILTIN_RUNTIME_POLICY)));
  pushSystem(prepare(memo, 'blueprint', input.blueprint));
  pushSystem(prepare(memo, 'persona', input.persona));
  pushSystem(prepare(memo, 'hard-rules', input.hardRules));
  pushSystem(tools);
  pushSystem(connections);
  pushSystem(prepare(memo, 'role', input.role));
  if (capabilities) pushSystem(prepare(memo, 'capabilities', { source: 'request:capabilities', text: capabilities }));
  if (input.purpose) {
    const purpose = prepare(memo, 'purpose', input.purpose);
    if (purpose) system.push(purpose);
    else warnings.push(`${input.purpose.source} is empty; no purpose block`);
  }
  pushSystem(prepare(memo, 'runtime-scope', RUNTIME_SCOPE_SOURCES[input.surface]));
  if (input.clock) pushSystem(clockBlock(memo, clockText(input.clock, memo.time), tokenizer));
  return { system, engine };
}

/**
 * The input blocks in layout order: recalled notes, live state, host state, lessons,
 * material, then the turn itself. Mandatory content must fit (each kind within its own
 * limit, and all of it within the total, else a 422); briefing items, experiences and
 * memory notes are taken in rank order while they fit, and what is left out is counted.
 */
function inputBlocks(memo: CompilerMemo, input: CompileInput, system: readonly PreparedBlock[], warnings: string[]): { inputs: PreparedBlock[]; omitted: Budget['omitted'] } {
  const { policy } = input;
  const limits = policy.blocks;
  const liveContext = prepare(memo, 'live-context', input.liveContext);
  const topic = prepare(memo, 'topic', input.topic);
  const evidence: PreparedBlock[] = [];
  for (const item of input.evidence ?? []) {
    const prepared = prepare(memo, 'evidence', { source: singleLine(item.sourceRef, 512) || 'request:evidence', text: item.content }, false);
    if (prepared) evidence.push(prepared);
  }
  const preferences = input.preferences ? prepare(memo, 'preferences', { source: 'request:preferences', text: preferencesText(input.preferences) }) : null;
  const task = prepare(memo, 'task', input.task, false);
  const message = prepare(memo, 'message', input.message, false);
  if (input.phase === 'turn' && !message) {
    throw new ProblemError('CC_VALIDATION_FAILED', '/message: the message is blank', { errors: [{ path: '/message', message: 'blank' }] });
  }

  const mandatoryInput: PreparedBlock[] = [];
  for (const prepared of [liveContext, topic]) if (prepared) mandatoryInput.push(prepared);
  for (const prepared of evidence) mandatoryInput.push(prepared);
  for (const prepared of [preferences, task, message]) if (prepared) mandatoryInput.push(prepared);
  let systemChars = 0;
  for (const prepared of system) {
    checkLimit(prepared.kind, prepared.content.length, limits);
    systemChars += prepared.segment.length;
  }
  let inputChars = 0;
  let evidenceChars = 0;
  for (const prepared of mandatoryInput) {
    if (prepared.kind === 'evidence') evidenceChars += prepared.content.length;
    else checkLimit(prepared.kind, prepared.content.length, limits);
    inputChars += prepared.segment.length;
  }
  if (evidenceChars > 0) checkLimit('evidence', evidenceChars, limits);
  const used = () => systemChars + (inputChars > 0 ? inputChars + 2 : 0);
  if (used() > policy.limitChars) throw overLimit(used(), policy.limitChars, [...system, ...mandatoryInput]);

  // Optional items, host state and lessons before recalled notes, each taken in rank order if it fits.
  const omitted = { memory: 0, briefing: 0, experience: 0 };
  const take = (kind: 'memory' | 'briefing' | 'experience', candidates: Array<PreparedBlock | null>): PreparedBlock[] => {
    const chosen: PreparedBlock[] = [];
    let chars = 0;
    for (const candidate of candidates) {
      if (!candidate) continue;
      const extra = candidate.segment.length + (inputChars === 0 ? 2 : 0);
      if (chars + candidate.content.length <= limits[kind] && used() + extra <= policy.limitChars) {
        chosen.push(candidate);
        chars += candidate.content.length;
        inputChars += candidate.segment.length;
      } else {
        omitted[kind]++;
      }
    }
    if (omitted[kind] > 0) warnings.push(`${omitted[kind]} ${kind} item${omitted[kind] === 1 ? '' : 's'} left out to stay within the budget`);
    return chosen;
  };
  const briefing = input.briefing?.length
    ? take('briefing', input.briefing.map((item) => prepare(memo, 'briefing', { source: 'request:briefing', text: briefingText(item) })))
    : [];
  const experiences = input.experiences?.length
    ? take(
        'experience',
        input.experiences.map((item) => prepare(memo, 'experience', { source: singleLine(item.sourceRef, 512) || 'request:experience', text: item.content }, false)),
      )
    : [];
  const memory = input.memory?.length ? take('memory', input.memory.map((note) => prepare(memo, 'memory', note))) : [];

  const inputs: PreparedBlock[] = memory;
  for (const prepared of [liveContext, topic]) if (prepared) inputs.push(prepared);
  for (const prepared of [...briefing, ...experiences, ...evidence]) inputs.push(prepared);
  for (const prepared of [preferences, task, message]) if (prepared) inputs.push(prepared);
  return { inputs, omitted };
}

/**
 * The compiled context of the blocks chosen. The stable prefix (every system block before
 * the first volatile one) is laid out, joined and hashed once per distinct set of blocks; a
 * compile adds only the volatile tail (the clock line) and the input, continuing the
 * prefix's hash state.
 */
function assemble(
  memo: CompilerMemo,
  tokenizer: TokenCounter,
  input: CompileInput,
  chosen: { system: PreparedBlock[]; inputs: PreparedBlock[]; engine: string | null; omitted: Budget['omitted']; warnings: string[] },
): CompiledContext {
  const { system, inputs } = chosen;
  let split = 0;
  while (split < system.length && PLACEMENT[system[split]!.kind].cacheClass !== 'volatile') split++;
  const planTokens: PlanTokens = {
    counter: tokenizer,
    memo: memo.tokens ?? NO_COMPILER_MEMO.tokens!,
    toolTokens: sessionToolTokens(memo, tokenizer, input.sessionTools),
    rule: CACHE_RULES[input.provider ?? 'openai'],
  };
  const stable = stablePart(memo, planTokens, split === system.length ? system : system.slice(0, split));
  const part = inputPart(memo, inputs);

  const blocks: Block[] = [...stable.blocks];
  const systemSegments: string[] = [...stable.segments];
  // Object.assign, not a spread: V8 copies an object with keys such as 'hard-rules' by spread several times slower.
  const byKind: Partial<Record<BlockKind, number>> = Object.assign({}, stable.byKind);
  const redactions = addCounts({ email: 0, phone: 0 }, stable.redactions);
  let totalTokens = stable.tokens;
  let tail = '';
  const planned: PlannedSegment[] = [];
  for (const prepared of system.slice(split)) {
    const placement = PLACEMENT[prepared.kind];
    planned.push({
      kind: prepared.kind,
      cacheClass: placement.cacheClass,
      blockIndex: blocks.length,
      segment: prepared.segment,
      key: prepared.key,
      approxTokens: prepared.segmentTokens,
      tokens: prepared.tokens,
    });
    blocks.push(blockOf(prepared));
    systemSegments.push(prepared.segment);
    tail += prepared.segment;
    byKind[prepared.kind] = (byKind[prepared.kind] ?? 0) + prepared.approxTokens;
    totalTokens += prepared.segmentTokens;
    addCounts(redactions, prepared.redactions);
  }
  // The engine and the session's tool tokens are this compile's own: the shared prefix is finished with them.
  const { cache, promptSha256 } = planCache(planned, memo.prefixes, memo.routeKeys, chosen.engine, planTokens, stable.plan);
  for (const block of part.blocks) blocks.push(block);
  for (const prepared of inputs) byKind[prepared.kind] = (byKind[prepared.kind] ?? 0) + prepared.approxTokens;
  totalTokens += part.tokens;
  addCounts(redactions, part.redactions);

  const systemPrompt = stable.text + tail;
  const inputPrompt = part.text;
  const instructions = inputPrompt === null ? systemPrompt : `${systemPrompt}\n\n${inputPrompt}`;
  const { policy } = input;
  return {
    blocks,
    systemPrompt,
    inputPrompt,
    instructions,
    segments: { system: systemSegments, input: [...part.segments] },
    prompt: { stable: stable.piece, tail, input: part.piece },
    budget: {
      limitChars: policy.limitChars,
      usedChars: instructions.length,
      remainingChars: policy.limitChars - instructions.length,
      omitted: chosen.omitted,
      blocks: policy.blocks,
    },
    cache,
    promptSha256,
    inputSha256: part.sha256,
    tokens: { total: totalTokens + (inputPrompt === null ? 0 : 1), byKind },
    redactions,
    warnings: chosen.warnings,
  };
}

/** The block a prepared block delivers, as compiles list it. */
function blockOf(prepared: PreparedBlock): Block {
  const placement = PLACEMENT[prepared.kind];
  return {
    kind: prepared.kind,
    authority: placement.authority,
    cacheClass: placement.cacheClass,
    source: prepared.source,
    content: prepared.content,
    chars: prepared.content.length,
    approxTokens: prepared.approxTokens,
    sha256: prepared.sha256,
  };
}

/**
 * The system blocks before the first volatile one, laid out, joined, planned and hashed:
 * what every compile with these blocks shares. Immutable; its blocks, segments and cache
 * plan are handed out to every compile that uses it.
 */
export interface StablePart {
  readonly blocks: readonly Block[];
  readonly segments: readonly string[];
  /** The segments joined: the system prompt up to the first volatile block. */
  readonly text: string;
  /** The same text as the prompt piece every compile with this prefix shares (`CompiledContext.prompt`). */
  readonly piece: PromptPiece;
  readonly byKind: Readonly<Partial<Record<BlockKind, number>>>;
  /** Segment tokens, summed. */
  readonly tokens: number;
  readonly redactions: Readonly<RedactionCounts>;
  /** The plan of this prefix, to finish with a compile's volatile tail, engine and tool tokens. */
  readonly plan: PlannedPrefix;
}

/** The input prompt of a list of input blocks: joined, hashed, summed. Immutable. */
export interface InputPart {
  readonly blocks: readonly Block[];
  readonly segments: readonly string[];
  readonly text: string | null;
  readonly piece: PromptPiece | null;
  readonly sha256: string | null;
  /** Segment tokens, summed. */
  readonly tokens: number;
  readonly redactions: Readonly<RedactionCounts>;
}

/**
 * The parts memos' key: the identities of the blocks, in order, or undefined when one of them
 * does not recur (a turn's message, evidence): such a part is laid out afresh.
 */
function partKey(blocks: readonly PreparedBlock[]): string | undefined {
  let key = '';
  for (const prepared of blocks) {
    if (prepared.ident === undefined) return undefined;
    key += `${prepared.ident}\0`;
  }
  return key;
}

function stablePart(memo: CompilerMemo, planTokens: PlanTokens, system: readonly PreparedBlock[]): StablePart {
  const key = partKey(system);
  const known = key === undefined ? undefined : memo.stableParts.get(key);
  // Its token counts are one tokenizer's: a memo shared by compilers with another recomputes it.
  if (known !== undefined && known.plan.tokenizer === planTokens.counter.name) return known;
  const planned: PlannedSegment[] = [];
  const blocks: Block[] = [];
  const segments: string[] = [];
  const byKind: Partial<Record<BlockKind, number>> = {};
  let tokens = 0;
  const redactions = { email: 0, phone: 0 };
  for (const prepared of system) {
    const placement = PLACEMENT[prepared.kind];
    planned.push({ kind: prepared.kind, cacheClass: placement.cacheClass, blockIndex: blocks.length, segment: prepared.segment, key: prepared.key, approxTokens: prepared.segmentTokens });
    blocks.push(blockOf(prepared));
    segments.push(prepared.segment);
    byKind[prepared.kind] = (byKind[prepared.kind] ?? 0) + prepared.approxTokens;
    tokens += prepared.segmentTokens;
    addCounts(redactions, prepared.redactions);
  }
  const plan = planPrefix(planned, memo.prefixes, planTokens);
  const text = segments.join('');
  const part: StablePart = { blocks, segments, text, piece: { text }, byKind, tokens, redactions, plan };
  // The text, its blocks' contents (about the same again) and a native hash state per boundary.
  return key === undefined ? part : memo.stableParts.set(key, part, 2 * key.length + 4 * text.length + 1024 * (plan.boundaries.length + 1));
}

function inputPart(memo: CompilerMemo, inputs: readonly PreparedBlock[]): InputPart {
  if (inputs.length === 0) return EMPTY_INPUT;
  const key = partKey(inputs);
  const known = key === undefined ? undefined : memo.inputParts.get(key);
  if (known !== undefined) return known;
  const hasher = new PrefixHasher(memo.prefixes);
  const blocks: Block[] = [];
  const segments: string[] = [];
  let tokens = 0;
  const redactions = { email: 0, phone: 0 };
  for (const prepared of inputs) {
    hasher.push(prepared.segment, prepared.key);
    blocks.push(blockOf(prepared));
    segments.push(prepared.segment);
    tokens += prepared.segmentTokens;
    addCounts(redactions, prepared.redactions);
  }
  const text = segments.join('');
  const part: InputPart = { blocks, segments, text, piece: { text }, sha256: hasher.finish(), tokens, redactions };
  return key === undefined ? part : memo.inputParts.set(key, part, 2 * key.length + 4 * text.length + 512);
}

const EMPTY_INPUT: InputPart = Object.freeze({ blocks: [], segments: [], text: null, piece: null, sha256: null, tokens: 0, redactions: NO_REDACTIONS });

const RUNTIME_SCOPE_SOURCES = Object.fromEntries(
  Object.entries(RUNTIME_SCOPES).map(([surface, text]) => [surface, Object.freeze({ source: `builtin:surface/${surface}`, text })]),
) as Record<string, SourceText>;

const BUILTIN_RUNTIME_POLICY: SourceText = Object.freeze({ source: RUNTIME_POLICY_SOURCE, text: RUNTIME_POLICY });
const BUILTIN_RUNTIME_POLICY_TOOL_USE: SourceText = Object.freeze({ source: RUNTIME_POLICY_TOOL_USE_SOURCE, text: RUNTIME_POLICY_TOOL_USE });

function checkLimit(kind: BlockKind, chars: number, limits: Record<BlockKind, number>): void {
  const limit = limits[kind];
  if (chars > limit) {
    throw budgetExceeded(kind, chars, limit, `The ${kind} block is ${chars} chars; its limit is ${limit}. It is never truncated: shorten it or raise the limit in policy.json.`);
  }
}
