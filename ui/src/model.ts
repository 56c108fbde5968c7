/**
 * What the viewer reads from the JSON API (mirrors schemas/trace.ts; test/ui/types.test.ts keeps
 * the fields the same, both ways) and the pure layout it draws from it. No DOM here, so it is
 * unit tested.
 */

export const AUTHORITIES = ['trusted-directive', 'advisory', 'content'] as const;

export interface TraceBlock {
  kind: string;
  authority: string;
  cacheClass: string;
  source: string;
  chars: number;
  approxTokens: number;
  sha256: string;
  /** Exact, counted on read by the tokenizer the cache plan named (its label line to the next block's); absent for an estimate. */
  tokens?: number | undefined;
}

export interface TraceSegment {
  sha256: string;
  offset: number;
  chars: number;
}

export interface TraceSource {
  path: string;
  size: number;
  mtimeMs: number;
  sha256: string;
  truncated?: boolean | undefined;
  /** How the file was read, so `?verify=sources` reads it again the same way. */
  maxBytes?: number | undefined;
  keep?: 'head' | 'tail' | undefined;
  within?: string | undefined;
  changed?: boolean | undefined;
  currentSha256?: string | null | undefined;
}

export interface TraceAbsent {
  path: string;
  appeared?: boolean | undefined;
}

export interface TraceListing {
  path: string;
  count: number;
  sha256: string;
  names?: string[] | undefined;
  changed?: boolean | undefined;
  currentCount?: number | null | undefined;
  currentSha256?: string | null | undefined;
  added?: string[] | undefined;
  removed?: string[] | undefined;
}

/** A function tool as a realtime session takes it. */
export interface Tool {
  type: 'function';
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** What a persona answer gave beside the prompts: the voice and the tools of its realtime session. */
export interface TraceRealtime {
  voice: string;
  toolNames: string[];
  toolsSha256: string;
  /** Null when the stored definitions could not be read back. */
  tools: Tool[] | null;
}

/** The lines of a file read in part: from the start (`1..120`), or from the end as negative numbers (`-120..-1`). */
export interface LineRange {
  from: number;
  to: number;
}

/** A file of a compile's heads-up display (docs/compiler.md, "HUD"). */
export interface HudFile {
  path: string;
  exists: boolean;
  sha256: string | null;
  size: number;
  bytes: number;
  tokens: number;
  lines: LineRange | null;
  blocks: string[];
  chars: number;
  share: number;
}

export interface Hud {
  snapshotSha256: string;
  limitChars: number;
  usedChars: number;
  files: HudFile[];
  derived: Array<{ kind: string; source: string; chars: number; share: number }>;
  /** Blocks built from several files (a persona's live context); absent in HUDs recorded before it existed. */
  shared?: Array<{ kind: string; source: string; chars: number; share: number; files: string[] }> | undefined;
}

/** A worker compile's recall decision: whether memory notes were recalled, and why not. */
export interface Recall {
  policy: string;
  interactionContext: string[];
  suppressed: boolean;
}

/** What shaped a worker's prompt: role, blueprint revision, experiences and preferences applied. */
export interface Receipts {
  role: { id: string; selectedBy: 'request' | 'default'; source: string; sha256: string } | null;
  blueprint: { revision: string; source: string | null; sha256: string | null };
  experiences: Array<{ sourceRef: string; sha256: string }>;
  preferences: Partial<Record<'length' | 'format' | 'tone' | 'initiative', string>>;
}

/** `1–120` from the start, `last 120` for a tail, `whole` for a file read whole. */
export function lineRangeText(lines: LineRange | null): string {
  if (lines === null) return 'whole';
  if (lines.from < 0) return lines.to === -1 ? `last ${formatNumber(-lines.from)}` : `${formatNumber(-lines.from)}–${formatNumber(-lines.to)} from the end`;
  return `${formatNumber(lines.from)}–${formatNumber(lines.to)}`;
}

/** A mid-call refresh: what changed since its parent run, by block, as delivered. */
export interface TraceRefresh {
  provider: 'openai' | 'gemini' | 'azure';
  /** How it reached the model: a conversation item, client content, or a reconnect with the whole setup. */
  delivery?: 'conversation-item' | 'client-content' | 'reconnect';
  changes: Array<{ block: string; source: string; added: number; removed: number }>;
  textSha256: string | null;
  chars: number;
}

export interface TraceEvent {
  runId: string;
  /** A mid-call refresh: the connect's run it compared with (this run is `<parentRunId>:refresh`). */
  parentRunId?: string | undefined;
  at: string;
  route: string;
  subject: { kind: 'persona' | 'worker'; id: string };
  /** The caller's name (never its token); absent without tokens and before callers were named. */
  caller?: string | undefined;
  surface?: string | undefined;
  status: number;
  outcome: 'delivered' | 'not-modified' | 'failed';
  /** The request id (the caller's `x-request-id` when it was a safe id, else the service's). */
  requestId?: string | undefined;
  /** The caller's W3C traceparent, when it sent a valid one. */
  traceparent?: string | undefined;
  request: Record<string, unknown>;
  blocks?: TraceBlock[] | undefined;
  promptSha256?: string | undefined;
  inputSha256?: string | null | undefined;
  budget?: Record<string, unknown> | undefined;
  cache?: Record<string, unknown> | undefined;
  tokens?: Record<string, unknown> | undefined;
  redactions?: { email: number; phone: number } | undefined;
  warnings?: string[] | undefined;
  realtime?: TraceRealtime | undefined;
  sources?: TraceSource[] | undefined;
  absent?: TraceAbsent[] | undefined;
  listings?: TraceListing[] | undefined;
  hud?: Hud | undefined;
  hudRejected?: string[] | undefined;
  recall?: Recall | undefined;
  receipts?: Receipts | undefined;
  refresh?: TraceRefresh | undefined;
  error?: { code: string; status: number; detail: string } | undefined;
  timing?: Record<string, number> | undefined;
  chars: number;
  /** With `?verify=sources`: why this event's sources were not checked (its chain link does not hold). */
  verifySkipped?: string | undefined;
  segments?: { system: TraceSegment[]; input: TraceSegment[] } | undefined;
  systemPrompt: string | null;
  inputPrompt: string | null;
  verified: boolean | null;
  chain: ChainStatus;
  /** A delivered refresh: the text it sent, rebuilt from the trace and held to `refresh.textSha256` (else null, and why). */
  refreshText?: { text: string | null; reason?: string | undefined } | undefined;
}

/** What a chain link proves; see docs/traces.md, "Tamper evidence". */
export type ChainStatus = 'signed' | 'linked' | 'unchained' | 'unverifiable' | 'broken';

/** A page of a run's events: `nextCursor` fetches the next one (null on the last). */
export interface RunTrace {
  runId: string;
  events: TraceEvent[];
  chain: { status: ChainStatus; problems: string[]; notes: string[] };
  nextCursor: string | null;
}

/** A run described by its most recent event. */
export interface RunSummary extends Pick<TraceEvent, 'runId' | 'at' | 'route' | 'subject' | 'surface' | 'status' | 'outcome' | 'chars'> {
  caller?: string | undefined;
  promptSha256: string | null;
  events: number;
  /** The instant the compile was made for (`nowUsed`); null for events recorded before it was listed. */
  compiledFor: string | null;
  topicId: string | null;
  role: string | null;
  engine: string | null;
  /** Warnings of the latest event. */
  warnings: number;
  requestId?: string | undefined;
  traceparent?: string | undefined;
}

export interface RunList {
  runs: RunSummary[];
  nextCursor: string | null;
  /** The listing stopped at its read bound before filling the page: `nextCursor` searches on. */
  partial: boolean;
  /** The caller whose runs alone are listed (its token reads only its own); absent when every run is. */
  visibleTo?: string | undefined;
}

/** An RFC 9457 problem as the service writes it; every member may be missing from a proxy's error. */
export interface Problem {
  title?: string;
  status?: number;
  detail?: string;
  code?: string;
  errors?: Array<{ path: string; message: string }>;
}

export interface BlockView {
  index: number;
  block: TraceBlock;
  /** The prompt the block was delivered in, when the event's segments say so. */
  place: 'system' | 'input' | null;
  /** The block exactly as delivered (label line and text, or its JSON input line); null when not recorded. */
  delivered: string | null;
  /** For an input line: its `text`, decoded; for a system block: the text under the label line. */
  text: string | null;
  /** Characters the block takes in the instructions: its delivered segment when known, else its content. */
  chars: number;
  /** Where it starts in the instructions (systemPrompt, blank line, inputPrompt). */
  start: number;
}

export interface BoundaryView {
  class: string;
  afterBlock: string;
  blockIndex: number | null;
  prefixChars: number;
  prefixSha256: string;
  approxTokens: number | null;
  /** The prefix's tokens as the plan's tokenizer counted them (tool definitions included); null in events from before exact counts. */
  tokens: number | null;
  belowMinimum: boolean | null;
}

export interface EventLayout {
  blocks: BlockView[];
  boundaries: BoundaryView[];
  /** The budget's limit, when recorded. */
  limitChars: number | null;
  usedChars: number;
  /** Characters the full width of the bar stands for: the limit, or what was used if more (or no limit). */
  scaleChars: number;
  minimumTokens: number | null;
  /** Whose prompt caching the plan was judged by, and what it caches (`none`: Gemini Live); null in events from before plans were judged per provider. */
  provider: string | null;
  caching: string | null;
  routeKey: string | null;
  /** The engine the route key was derived for; null when the request named none (or the event predates it). */
  engine: string | null;
  /** What the boundaries' `tokens` were counted with (`o200k_base`, or `estimate`). */
  tokenizer: string | null;
  /** Tokens of the tool definitions sent beside the instructions, counted into every boundary. */
  toolTokens: number | null;
  omitted: Record<string, number>;
}

const num = (value: unknown): number | null => (typeof value === 'number' && Number.isFinite(value) ? value : null);
const str = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** The `text` of a JSON input line, or null when the line is not one. */
export function decodeInputLine(line: string): string | null {
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed && typeof parsed === 'object' && typeof (parsed as { text?: unknown }).text === 'string') return (parsed as { text: string }).text;
  } catch {
    // Not an input line: shown as delivered.
  }
  return null;
}

/** The text of a system segment below its label line. */
function labelledText(segment: string): string {
  // Every block after the first carries the blank line that separates it.
  const labelled = segment.replace(/^\n+/, '');
  if (!labelled.startsWith('<<cc ')) return segment;
  const newline = labelled.indexOf('\n');
  return newline >= 0 ? labelled.slice(newline + 1) : '';
}

/**
 * Lays an event out for drawing: each block with its delivered text and place in the
 * instructions, and the cache boundaries. Trusted blocks are the system segments in
 * order and the others the input segments in order (docs/compiler.md); when the counts
 * disagree the texts are left out rather than guessed.
 */
export function layoutEvent(event: TraceEvent): EventLayout {
  const blocks = event.blocks ?? [];
  const system = event.segments?.system ?? [];
  const input = event.segments?.input ?? [];
  const trusted = blocks.filter((block) => block.authority === 'trusted-directive').length;
  const systemMapped = event.systemPrompt !== null && trusted === system.length;
  const inputMapped = event.inputPrompt !== null && blocks.length - trusted === input.length;
  const inputStart = (event.systemPrompt?.length ?? 0) + 2;

  let systemNext = 0;
  let inputNext = 0;
  let cursor = 0;
  const views: BlockView[] = blocks.map((block, index) => {
    const isSystem = block.authority === 'trusted-directive';
    const segment = isSystem ? (systemMapped ? system[systemNext++] : undefined) : inputMapped ? input[inputNext++] : undefined;
    if (segment) {
      const prompt = (isSystem ? event.systemPrompt : event.inputPrompt) ?? '';
      const delivered = prompt.slice(segment.offset, segment.offset + segment.chars);
      const start = isSystem ? segment.offset : inputStart + segment.offset;
      cursor = start + segment.chars;
      return {
        index,
        block,
        place: isSystem ? 'system' : 'input',
        delivered,
        text: isSystem ? labelledText(delivered) : decodeInputLine(delivered.replace(/\n$/, '')),
        chars: segment.chars,
        start,
      };
    }
    const start = cursor;
    cursor += block.chars;
    return { index, block, place: null, delivered: null, text: null, chars: block.chars, start };
  });

  const budget = event.budget ?? {};
  const limitChars = num(budget['limitChars']);
  const usedChars = num(budget['usedChars']) ?? event.chars;
  const omittedValue = budget['omitted'];
  const omitted: Record<string, number> = {};
  if (typeof omittedValue === 'number') omitted['items'] = omittedValue;
  else if (omittedValue && typeof omittedValue === 'object') {
    for (const [kind, count] of Object.entries(omittedValue)) if (typeof count === 'number') omitted[kind] = count;
  }

  const cache = event.cache ?? {};
  const boundaries: BoundaryView[] = [];
  for (const raw of Array.isArray(cache['boundaries']) ? (cache['boundaries'] as unknown[]) : []) {
    if (!raw || typeof raw !== 'object') continue;
    const boundary = raw as Record<string, unknown>;
    const prefixChars = num(boundary['prefixChars']);
    if (prefixChars === null) continue;
    boundaries.push({
      class: str(boundary['class']) ?? '?',
      afterBlock: str(boundary['afterBlock']) ?? '?',
      blockIndex: num(boundary['blockIndex']),
      prefixChars,
      prefixSha256: str(boundary['prefixSha256']) ?? '',
      approxTokens: num(boundary['approxTokens']),
      tokens: num(boundary['tokens']),
      belowMinimum: typeof boundary['belowMinimum'] === 'boolean' ? boundary['belowMinimum'] : null,
    });
  }

  return {
    blocks: views,
    boundaries,
    limitChars,
    usedChars,
    scaleChars: Math.max(limitChars ?? 0, usedChars, cursor, 1),
    minimumTokens: num(cache['minimumTokens']),
    provider: str(cache['provider']),
    caching: str(cache['caching']),
    routeKey: str(cache['routeKey']),
    engine: str(cache['engine']),
    tokenizer: str(cache['tokenizer']),
    toolTokens: num(cache['toolTokens']),
    omitted,
  };
}

/**
 * A block's (or file's) share of the budget: `chars / limitChars` to four decimals, as the
 * service's HUD computes `share` (src/core/hud.ts), so every view shows one figure.
 */
export function shareOf(chars: number, limitChars: number | null): number | null {
  if (limitChars === null || limitChars <= 0) return null;
  return Math.round((chars / limitChars) * 10_000) / 10_000;
}

/** `3.0 %` for a share of 0.0302: one decimal, as every view prints a share. */
export function formatShare(share: number | null): string {
  return share === null ? '—' : `${(share * 100).toFixed(1)} %`;
}

/** Whether a plan's tokens are exact (counted by a real tokenizer, such as `o200k_base`) rather than the estimate. */
export function exactTokens(tokenizer: string | null): boolean {
  return tokenizer !== null && tokenizer !== 'estimate';
}

/**
 * A cache prefix's tokens as its plan counted them, the one figure every view shows: exact
 * (no ≈) when the plan's tokenizer is a real one; `≈` and the estimate for a plan counted
 * without one, or an event from before exact counts. Null when none was recorded.
 */
export function prefixTokens(boundary: Pick<BoundaryView, 'tokens' | 'approxTokens'>, tokenizer: string | null): string | null {
  if (boundary.tokens !== null) return exactTokens(tokenizer) ? formatNumber(boundary.tokens) : `≈${formatNumber(boundary.tokens)}`;
  return boundary.approxTokens === null ? null : `≈${formatNumber(boundary.approxTokens)}`;
}

/** What a token figure is: `exact, o200k_base` or `estimate`. */
export function tokensNote(tokenizer: string | null): string {
  return exactTokens(tokenizer) ? `exact, ${tokenizer}` : 'estimate';
}

/** The share of the bar a number of characters takes, in percent, clamped to [0, 100]. */
export function percentOf(chars: number, scaleChars: number): number {
  if (scaleChars <= 0) return 0;
  return Math.min(100, Math.max(0, (chars / scaleChars) * 100));
}

/** The parts of a call traced as runs of their own beside its connect: `<connect>:refresh`, `<connect>:reconnect`. */
export const CALL_PARTS = ['refresh', 'reconnect'] as const;
export type CallPart = (typeof CALL_PARTS)[number];

/**
 * The connect a run belongs to, when it is a part of a call: a run `<connect>:refresh` traced
 * by a `…/refresh` route (or `:reconnect` by a `…/reconnect` one). Both are needed: a caller
 * may name its own connect `x:refresh`, but only the refresh route traces into such a run.
 */
export function callPartOf(run: Pick<RunSummary, 'runId' | 'route'>): { connect: string; part: CallPart } | null {
  for (const part of CALL_PARTS) {
    const suffix = `:${part}`;
    if (run.runId.endsWith(suffix) && run.runId.length > suffix.length && run.route.endsWith(`/${part}`)) return { connect: run.runId.slice(0, -suffix.length), part };
  }
  return null;
}

/** A row of the runs list: a run, and the call part nested under its connect (`nested`) when the connect is on the same page. */
export interface RunRow {
  run: RunSummary;
  callPart: { connect: string; part: CallPart } | null;
  nested: boolean;
}

/**
 * The runs of a page with each call part moved right under its connect, when the connect is
 * on the page (a refresh is traced after its connect, so it is listed above it); a part whose
 * connect is on another page stays where it is, named as a part of that call.
 */
export function groupCalls(runs: readonly RunSummary[]): RunRow[] {
  const onPage = new Set(runs.map((run) => run.runId));
  const parts = new Map<string, RunRow[]>();
  for (const run of runs) {
    const callPart = callPartOf(run);
    if (callPart !== null && onPage.has(callPart.connect) && callPart.connect !== run.runId) {
      const list = parts.get(callPart.connect) ?? [];
      list.push({ run, callPart, nested: true });
      parts.set(callPart.connect, list);
    }
  }
  const rows: RunRow[] = [];
  for (const run of runs) {
    const callPart = callPartOf(run);
    if (callPart !== null && parts.get(callPart.connect)?.some((row) => row.run === run)) continue;
    rows.push({ run, callPart, nested: false });
    rows.push(...(parts.get(run.runId) ?? []));
  }
  return rows;
}

/** The runs list's filters, as `GET /runs` takes them (and the page's hash keeps them). */
export interface RunFilter {
  persona?: string;
  worker?: string;
  status?: string;
  outcome?: string;
  runId?: string;
  requestId?: string;
  traceparent?: string;
  from?: string;
  to?: string;
  cursor?: string;
}

export const FILTER_KEYS = ['persona', 'worker', 'status', 'outcome', 'runId', 'requestId', 'traceparent', 'from', 'to', 'cursor'] as const;

export type View =
  | { name: 'runs'; filter: RunFilter }
  | { name: 'run'; runId: string }
  | { name: 'compare'; runIds: [string, string] }
  | { name: 'not-found'; hash: string };

const RUN_ID = /^[A-Za-z0-9_:-]{1,128}$/;

/** Reads the page's hash route: `#/runs?persona=mars`, `#/runs/<runId>`; anything else is not found. */
export function parseHash(hash: string): View {
  const path = hash.replace(/^#/, '') || '/runs';
  const [pathname = '', search = ''] = path.split('?', 2);
  if (pathname === '/runs' || pathname === '/runs/' || pathname === '/') {
    const params = new URLSearchParams(search);
    const filter: RunFilter = {};
    for (const key of FILTER_KEYS) {
      const value = params.get(key)?.trim();
      if (value) filter[key] = value;
    }
    return { name: 'runs', filter };
  }
  const run = /^\/runs\/([^/]+)$/.exec(pathname);
  if (run) {
    const runId = runIdFrom(run[1]!);
    if (runId !== null) return { name: 'run', runId };
  }
  const compare = /^\/compare\/([^/]+)\/([^/]+)$/.exec(pathname);
  if (compare) {
    const [a, b] = [runIdFrom(compare[1]!), runIdFrom(compare[2]!)];
    if (a !== null && b !== null) return { name: 'compare', runIds: [a, b] };
  }
  return { name: 'not-found', hash };
}

/** A run id from a hash segment, or null when it is not one. */
function runIdFrom(segment: string): string | null {
  let runId: string;
  try {
    runId = decodeURIComponent(segment);
  } catch {
    return null;
  }
  return RUN_ID.test(runId) ? runId : null;
}

function filterQuery(filter: RunFilter): string {
  const params = new URLSearchParams();
  for (const key of FILTER_KEYS) {
    const value = filter[key];
    if (value) params.set(key, value);
  }
  return params.toString();
}

export function runsHash(filter: RunFilter = {}): string {
  const query = filterQuery(filter);
  return query ? `#/runs?${query}` : '#/runs';
}

export function runHash(runId: string): string {
  return `#/runs/${encodeURIComponent(runId)}`;
}

/** The comparison of two runs (`#/compare/<a>/<b>`); the page puts the older first whatever the order. */
export function compareHash(a: string, b: string): string {
  return `#/compare/${encodeURIComponent(a)}/${encodeURIComponent(b)}`;
}

/** Which cache boundaries of `event` kept the prefix of the run's event before it (the same prefix sha256, class by class). */
export interface PrefixHeld {
  held: string[];
  moved: string[];
}

/** How an event's cache prefixes compare with the previous delivered event of its run; null when there is nothing to compare. */
export function prefixHeld(previous: TraceEvent | null, event: TraceEvent): PrefixHeld | null {
  if (previous === null || !event.blocks?.length || !previous.blocks?.length) return null;
  const before = new Map(layoutEvent(previous).boundaries.map((boundary) => [boundary.class, boundary.prefixSha256]));
  const result: PrefixHeld = { held: [], moved: [] };
  for (const boundary of layoutEvent(event).boundaries) (before.get(boundary.class) === boundary.prefixSha256 ? result.held : result.moved).push(boundary.class);
  return result;
}

/** API paths relative to the page (`/ui/`), so the viewer also works behind a path prefix. */
export function runListPath(filter: RunFilter, limit: number): string {
  const query = filterQuery(filter);
  return `../runs?limit=${limit}${query ? `&${query}` : ''}`;
}

/** Events per page of a run the viewer asks for. */
export const TRACE_PAGE_SIZE = 20;

/**
 * A page of a run's trace (`cursor`: the `nextCursor` of the page before); with
 * `verifySources` (the run page) each brain file is checked against the brain now.
 */
export function runTracePath(runId: string, options: { verifySources?: boolean; cursor?: string | null; limit?: number } = {}): string {
  const params = new URLSearchParams({ limit: String(options.limit ?? TRACE_PAGE_SIZE) });
  if (options.verifySources !== false) params.set('verify', 'sources');
  if (options.cursor) params.set('cursor', options.cursor);
  return `../runs/${encodeURIComponent(runId)}/trace?${params.toString()}`;
}

/**
 * The realtime session a persona answer delivered, as JSON text: `{type, instructions,
 * audio: {output: {voice}}, tools}` rebuilt from the trace — instructions from the rebuilt
 * prompts (made ASCII when the event's request says `sessionInstructions: "ascii"`, as every
 * persona answer's are since the session became realtime-safe by default), voice and tools
 * from `realtime`. Byte for byte the answer's `session` (its JSON is JSON.stringify's); null
 * when the trace lacks a part.
 */
export function sessionJson(event: TraceEvent): string | null {
  // A Gemini setup declares the tools translated, which the viewer does not redo: no OpenAI session to copy.
  if (!event.realtime || event.realtime.tools === null || event.systemPrompt === null || event.request['provider'] === 'gemini') return null;
  const delivered = event.inputPrompt === null ? event.systemPrompt : `${event.systemPrompt}\n\n${event.inputPrompt}`;
  const instructions = event.request['sessionInstructions'] === 'ascii' ? toAscii(delivered) : delivered;
  return JSON.stringify({ type: 'realtime', instructions, audio: { output: { voice: event.realtime.voice } }, tools: event.realtime.tools });
}

const numbers = new Intl.NumberFormat('en-US');

export function formatNumber(value: number): string {
  return numbers.format(value);
}

const pad = (value: number) => String(value).padStart(2, '0');

/** `2026-11-30 17:30 UTC`: the minute an event was compiled for (`nowUsed`; `now` or the trace time for events recorded before it). */
export function eventMinute(event: Pick<TraceEvent, 'request' | 'at'>): string {
  for (const value of [event.request['nowUsed'], event.request['now']]) {
    const minute = typeof value === 'string' ? utcMinute(value) : null;
    if (minute !== null) return minute;
  }
  return utcMinute(event.at) ?? event.at;
}

/** `2026-11-30 17:30 UTC`: the minute of an instant, in UTC (the minute a compile was made for); null when it does not parse. */
export function utcMinute(iso: string | null | undefined): string | null {
  if (typeof iso !== 'string') return null;
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC` : null;
}

/** `2026-01-05 10:11:12` in the viewer's local time; the ISO instant if it does not parse. */
export function formatTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

export function shortSha(sha: string | null | undefined): string {
  return sha ? sha.slice(0, 12) : '—';
}

const ASCII_MAP: Record<string, string> = {
  '\u2010': '-', '\u2011': '-', '\u2012': '-', '\u2013': '-', '\u2014': '--', '\u2015': '--',
  '\u2212': '-', '\u2043': '-', '\u00ad': '',
  '\u2018': "'", '\u2019': "'", '\u201a': "'", '\u201b': "'", '\u2032': "'", '\u00b4': "'",
  '\u201c': '"', '\u201d': '"', '\u201e': '"', '\u201f': '"', '\u2033': '"', '\u00ab': '"', '\u00bb': '"',
  '\u2039': "'", '\u203a': "'",
  '\u2026': '...', '\u2022': '-', '\u2023': '-', '\u25e6': '-', '\u00b7': '-', '\u25aa': '-', '\u25cf': '-',
  '\u2192': '->', '\u2190': '<-', '\u2194': '<->', '\u21d2': '=>', '\u21d0': '<=', '\u21d4': '<=>',
  '\u2264': '<=', '\u2265': '>=', '\u2260': '!=', '\u00d7': 'x', '\u00f7': '/', '\u00b1': '+/-',
  '\u00a0': ' ', '\u202f': ' ', '\u2007': ' ', '\u2009': ' ', '\u200a': ' ', '\u3000': ' ',
  '\u200b': '', '\u200c': '', '\u200d': '', '\u2060': '', '\ufeff': '',
  '\u00a9': '(c)', '\u00ae': '(R)', '\u2122': '(TM)', '\u00b0': ' degrees',
  '\u20ac': 'EUR ', '\u00a3': 'GBP ', '\u00a5': 'JPY ', '\u2044': '/', '\u00bd': '1/2', '\u00bc': '1/4', '\u00be': '3/4',
  '\u00df': 'ss', '\u00e6': 'ae', '\u00c6': 'AE', '\u0153': 'oe', '\u0152': 'OE', '\u00f8': 'o', '\u00d8': 'O',
  '\u0142': 'l', '\u0141': 'L', '\u0111': 'd', '\u0110': 'D', '\u00f0': 'd', '\u00fe': 'th', '\u00de': 'Th',
  '\u2713': 'v', '\u2714': 'v', '\u2717': 'x', '\u2718': 'x',
};

const MAPPED = new RegExp(`[${Object.keys(ASCII_MAP).filter((key) => key.length === 1).join('').replace(/[\]\\^-]/g, '\\$&')}]`, 'g');
const COMBINING_MARKS = /[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]/g;

/**
 * The service's `toAscii` (src/core/text.ts): typographic Unicode transliterated to ASCII,
 * the rest outside ASCII dropped, byte for byte. A persona answer's `session.instructions` are
 * the delivered instructions made ASCII, and `sessionJson` rebuilds that session from the
 * trace; the viewer is built alone (ui/tsconfig.json), so this is a copy, held to the
 * service's by test/ui/ascii.test.ts.
 */
export function toAscii(text: string): string {
  if (/^[\u0000-\u007f]*$/.test(text)) return text;
  const mapped = text.replace(MAPPED, (char) => ASCII_MAP[char] ?? '');
  const decomposed = mapped.normalize('NFKD').replace(COMBINING_MARKS, '');
  const remapped = decomposed.replace(MAPPED, (char) => ASCII_MAP[char] ?? '');
  return remapped.replace(/( ?)[^\u0000-\u007f]+( ?)/g, (_match, before: string, after: string) => (before && after ? ' ' : before || after));
}

/** What an authority means to an operator: the words every view shows (the schema's name on hover). */
export const AUTHORITY_LABELS: Readonly<Record<string, string>> = Object.freeze({
  'trusted-directive': 'instructions',
  advisory: 'background data',
  content: 'task input',
});

/** How long a block's text stays the same, in an operator's words (the schema's cache class on hover). */
export const CACHE_CLASS_LABELS: Readonly<Record<string, string>> = Object.freeze({
  'worker-stable': 'same every call',
  'channel-stable': 'same per channel',
  'surface-stable': 'same per surface',
  volatile: 'changes per call',
});

export function authorityLabel(authority: string): string {
  return AUTHORITY_LABELS[authority] ?? authority;
}

export function cacheClassLabel(cacheClass: string): string {
  return CACHE_CLASS_LABELS[cacheClass] ?? cacheClass;
}

/** A part of the prompt (a block, a file's blocks) in percent of the characters delivered, the one figure its bar and its label show. */
export function promptPercent(chars: number, deliveredChars: number): number | null {
  if (deliveredChars <= 0) return null;
  return Math.round((chars / deliveredChars) * 1000) / 10;
}

/** `1.6 %` (or `—`). */
export function formatPercent(percent: number | null): string {
  return percent === null ? '—' : `${percent.toFixed(1)} %`;
}

/**
 * Where `query` occurs in `text`, case-insensitively (ASCII and Unicode simple case), as
 * `[start, end)` pairs, left to right and not overlapping; at most `limit`. A plain scan, no
 * pattern built from the query: linear in the text's length.
 */
export function findMatches(text: string, query: string, limit = 1000): Array<[number, number]> {
  const needle = query.toLowerCase();
  if (needle === '') return [];
  const haystack = text.toLowerCase();
  // Lower-casing may change a string's length (e.g. İ): then the positions are the lowered text's, so search the text itself.
  const [within, find] = haystack.length === text.length ? [haystack, needle] : [text, query];
  const found: Array<[number, number]> = [];
  for (let at = within.indexOf(find); at >= 0 && found.length < limit; at = within.indexOf(find, at + find.length)) found.push([at, at + find.length]);
  return found;
}

/**
 * A refresh's delivered text, readable: its first line (since when, and the clock), then
 * each changed block's JSON line decoded to its name and text (`New:`, `No longer:`); a line
 * that is not a block stays as it is.
 */
export function readableRefreshText(text: string): string {
  return text
    .split('\n')
    .map((line) => {
      const decoded = decodeInputLine(line);
      if (decoded === null) return line;
      const block = (JSON.parse(line) as { block?: unknown }).block;
      return `[${typeof block === 'string' ? block : 'block'}]\n${decoded}`;
    })
    .join('\n');
}

/** `GET /status` (mirrors schemas/health.ts): readiness and how compiles went since the process started. */
export interface ServiceStatus {
  status: 'ready' | 'not-ready';
  checks: Array<{ name: string; ok: boolean; reason?: string | undefined; note?: string | undefined }>;
  since: string;
  compiles: { total: number; failed: number; failureRate: number | null; byCode: Record<string, number> };
  fallbacks: { total: number; static: number; stale: number };
}

export const STATUS_PATH = '../status';

/** The status strip's words: readiness (the failing checks and why), the failure rate with its codes, the fallbacks. */
export function statusWords(status: ServiceStatus): { ready: boolean; readiness: string; compiles: string; fallbacks: string } {
  const failing = status.checks.filter((check) => !check.ok);
  const { total, failed, failureRate, byCode } = status.compiles;
  const codes = Object.entries(byCode)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([code, count]) => `${code} ${formatNumber(count)}`)
    .join(', ');
  return {
    ready: status.status === 'ready',
    readiness: status.status === 'ready' ? 'Ready' : `Not ready: ${failing.map((check) => `${check.name}${check.reason ? ` (${check.reason})` : ''}`).join('; ')}`,
    compiles:
      total === 0
        ? 'no compiles yet'
        : `${formatNumber(total)} compile${total === 1 ? '' : 's'}, ${formatNumber(failed)} failed (${failureRate === null ? '—' : `${(failureRate * 100).toFixed(1)} %`})${codes ? `: ${codes}` : ''}`,
    fallbacks: status.fallbacks.total === 0 ? 'no call fell back' : `${formatNumber(status.fallbacks.total)} call${status.fallbacks.total === 1 ? '' : 's'} fell back (${status.fallbacks.static} static, ${status.fallbacks.stale} stale)`,
  };
}

/**
 * The one size figure of an event: what reached the model — a refresh's own text (a
 * reconnect sent the whole setup again: its prompts), else the prompts delivered.
 */
export function eventSize(event: Pick<TraceEvent, 'chars' | 'refresh' | 'outcome'>): string {
  if (event.refresh && event.refresh.delivery !== 'reconnect') return event.outcome === 'delivered' ? `${formatNumber(event.refresh.chars)} chars delivered` : 'nothing sent';
  return `${formatNumber(event.chars)} chars delivered`;
}
