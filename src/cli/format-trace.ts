import type { RunTrace } from '../../schemas/trace.js';
import { table } from './table.js';

/**
 * Renders a run's trace for people at a terminal: what was delivered, block by block,
 * where the cache boundaries fell, and what was redacted, degraded or failed. Pure.
 */

export interface FormatOptions {
  /** Print the exact delivered system prompt after each event (the input is always printed, decoded). */
  prompts?: boolean;
  /** The number of the page's first event in the run (1 for the first page). */
  first?: number;
}

interface BoundaryLike {
  class?: unknown;
  afterBlock?: unknown;
  prefixChars?: unknown;
  approxTokens?: unknown;
  tokens?: unknown;
  belowMinimum?: unknown;
  prefixSha256?: unknown;
}

type Listing = NonNullable<RunTrace['events'][number]['listings']>[number];

/** What `?verify=sources` found of a listing: nothing when it was not asked. */
function listingState(listing: Listing): string {
  if (listing.changed === undefined) return '';
  if (!listing.changed) return '  unchanged';
  if (listing.currentCount === null || listing.currentCount === undefined) return '  CANNOT BE LISTED now';
  const names = [...(listing.added ?? []).map((name) => `+${name}`), ...(listing.removed ?? []).map((name) => `-${name}`)];
  return `  FILES CHANGED since: ${names.length > 0 ? names.join(', ') : `${listing.currentCount} now`}`;
}

const CHAIN: Record<RunTrace['chain']['status'], string> = {
  signed: 'chain signed: every event holds its HMAC link under TRACE_SIGNING_KEY, and nothing around them is missing',
  linked: 'chain linked, without a key: consistent, but anyone who can write TRACE_DIR could have recomputed it',
  unchained: 'no chain: written before traces were chained (format 2)',
  unverifiable: 'chain unverifiable: signed with a key that is not configured here',
  broken: 'CHAIN BROKEN: events were altered, inserted, removed or reordered, or a file is missing or cut',
};

/** Why an event is or is not vouched for, in a few words. */
function eventVerdict(event: RunTrace['events'][number]): string {
  if (event.chain === 'broken') return 'EVENT ALTERED, FORGED OR OUT OF PLACE (chain broken)';
  if (event.verified === true) return 'prompts verified';
  if (event.verified === null) return 'no prompt';
  if (event.chain !== 'signed' && event.chain !== 'linked') return `NOT VOUCHED FOR (chain ${event.chain})`;
  return 'PROMPTS DO NOT MATCH THEIR DIGESTS';
}

/** One line of an input prompt: a JSON object of a block's kind, authority, source and text; null when the line is not one. */
function inputLineOf(line: string): { block: string; authority: string; source: string; text: string } | null {
  try {
    const parsed: unknown = JSON.parse(line);
    if (parsed === null || typeof parsed !== 'object') return null;
    const { block, authority, source, text } = parsed as Record<string, unknown>;
    return typeof block === 'string' && typeof authority === 'string' && typeof source === 'string' && typeof text === 'string' ? { block, authority, source, text } : null;
  } catch {
    return null;
  }
}

/**
 * An input prompt for people: each of its JSON lines decoded into a heading (the block, its
 * source and authority) and the block's text, a line each — instead of one escaped line of
 * thousands of characters. A line that is not a block's is printed as delivered.
 */
export function decodedInput(inputPrompt: string): string[] {
  const lines: string[] = [];
  for (const line of inputPrompt.replace(/\n$/, '').split('\n')) {
    const decoded = inputLineOf(line);
    if (decoded === null) lines.push(`    ${line}`);
    else lines.push(`    [${decoded.block}] ${decoded.source} (${decoded.authority})`, ...decoded.text.split('\n').map((text) => `      ${text}`));
  }
  return lines;
}

/** The line a page opens with: the whole run when it is one page, else which of its events. */
function heading(trace: RunTrace, first: number): string {
  const count = trace.events.length;
  if (first === 1 && trace.nextCursor === null) return `run ${trace.runId} — ${count} event${count === 1 ? '' : 's'}`;
  const which = count === 0 ? 'no more events' : `events ${first}–${first + count - 1}`;
  return `run ${trace.runId} — ${which}${trace.nextCursor === null ? ', the last' : ', more follow'}`;
}

/**
 * One page of a run as plain text, events in order (numbered from `options.first`), with
 * what the chains around them say. Text from the trace is printed as it is: the CLI makes it
 * inert for a terminal (`terminal-text.ts`).
 */
export function formatTrace(trace: RunTrace, options: FormatOptions = {}): string {
  const first = options.first ?? 1;
  const lines = [heading(trace, first), CHAIN[trace.chain.status]];
  for (const problem of trace.chain.problems) lines.push(`  problem: ${problem}`);
  for (const note of trace.chain.notes) lines.push(`  note: ${note}`);
  trace.events.forEach((event, index) => {
    lines.push('');
    const verified = eventVerdict(event);
    lines.push(
      `#${first + index} ${event.at}  ${event.route}  ${event.subject.kind} ${event.subject.id}${event.surface ? ` (${event.surface})` : ''}  ` +
        `${event.status} ${event.outcome}  ${verified}`,
    );
    // Which answer a persona route sent: the lean connect answer (`view=session`) is said; the full one is the default.
    const view = event.request['view'] === 'session' ? 'answered the lean connect answer (view=session)' : null;
    const correlation = [event.caller && `caller ${event.caller}`, event.requestId && `requestId ${event.requestId}`, event.traceparent && `traceparent ${event.traceparent}`, view].filter(Boolean);
    if (correlation.length > 0) lines.push(`  ${correlation.join('  ')}`);
    if (event.error) lines.push(`  error ${event.error.code} (${event.error.status}): ${event.error.detail}`);
    // What changes per call first, readable: the live context, topic and task, a line each.
    if (event.inputPrompt) lines.push('  input (background data and task input, decoded; --json for the exact JSON lines):', ...decodedInput(event.inputPrompt));
    if (event.blocks && event.blocks.length > 0) {
      lines.push('  blocks:');
      lines.push(
        ...table([
          ['kind', 'authority', 'cache class', 'chars', '~tokens', 'source'],
          ...event.blocks.map((block) => [block.kind, block.authority, block.cacheClass, String(block.chars), String(block.approxTokens), block.source]),
        ]).map((line) => `  ${line}`),
      );
    }
    const boundaries = (event.cache?.['boundaries'] as BoundaryLike[] | undefined) ?? [];
    if (boundaries.length > 0) {
      const tokenizer = event.cache?.['tokenizer'];
      // Events traced before plans were judged per provider name none: OpenAI's.
      const nothing = event.cache?.['caching'] === 'none' ? `, ${String(event.cache['provider'])} caches nothing` : '';
      lines.push(`  cache: routeKey ${String(event.cache?.['routeKey'] ?? '-')}${typeof tokenizer === 'string' ? `, tokens by ${tokenizer}` : ''}${nothing}`);
      const minimum = event.cache?.['minimumTokens'];
      const below = typeof minimum === 'number' ? `  below the ${minimum.toLocaleString('en-US')}-token cache minimum` : '  below the cache minimum';
      for (const boundary of boundaries) {
        const flag = boundary.belowMinimum ? below : '';
        // Events traced before exact counts existed carry only the estimate.
        const tokens = typeof boundary.tokens === 'number' ? `${boundary.tokens} tokens` : `~${String(boundary.approxTokens)} tokens`;
        lines.push(`    after ${String(boundary.afterBlock)} (${String(boundary.class)}): ${String(boundary.prefixChars)} chars, ${tokens}${flag}`);
      }
    }
    if (event.budget) {
      const { limitChars, usedChars, remainingChars } = event.budget as Record<string, unknown>;
      lines.push(`  budget: ${String(usedChars)} of ${String(limitChars)} chars used, ${String(remainingChars)} left`);
      const omitted = (event.budget as Record<string, unknown>)['omitted'];
      if (omitted && typeof omitted === 'object' && Object.values(omitted).some((count) => Number(count) > 0)) {
        lines.push(`  omitted: ${Object.entries(omitted).map(([kind, count]) => `${kind} ${String(count)}`).join(', ')}`);
      }
    }
    if (event.realtime) {
      const { voice, toolNames, toolsSha256, tools } = event.realtime;
      const unreadable = tools === null ? ', DEFINITIONS UNREADABLE' : '';
      lines.push(`  realtime: voice ${voice}, tools ${toolNames.join(', ') || 'none'} (sha256 ${toolsSha256.slice(0, 12)}${unreadable})`);
    }
    if (event.redactions) lines.push(`  redacted: ${event.redactions.email} email, ${event.redactions.phone} phone`);
    if (event.recall) {
      const { policy, interactionContext, suppressed } = event.recall;
      lines.push(`  recall: ${suppressed ? 'SUPPRESSED (clean-room worker, clean run)' : `${policy}${interactionContext.length ? `, interaction context: ${interactionContext.join(', ')}` : ''}`}`);
    }
    if (event.receipts) {
      const { role, blueprint, experiences, preferences } = event.receipts;
      const settings = Object.entries(preferences).map(([key, value]) => `${key} ${value}`);
      lines.push(
        `  receipts: role ${role ? `${role.id} (${role.selectedBy}, sha256 ${role.sha256.slice(0, 12)})` : 'none'}; blueprint ${blueprint.revision}` +
          `${blueprint.sha256 ? ` (sha256 ${blueprint.sha256.slice(0, 12)})` : ''}; ${experiences.length} experience${experiences.length === 1 ? '' : 's'}; ` +
          `preferences ${settings.length ? settings.join(', ') : 'none'}`,
      );
    }
    if (event.hud) {
      const found = event.hud.files.filter((file) => file.exists).length;
      lines.push(`  hud: ${event.hud.files.length} files looked for, ${found} found, snapshot ${event.hud.snapshotSha256.slice(0, 16)} (context-compiler trace --json for the rows)`);
    }
    for (const problem of event.hudRejected ?? []) lines.push(`  HUD REJECTED: ${problem}`);
    for (const warning of event.warnings ?? []) lines.push(`  warning: ${warning}`);
    if (event.verifySkipped) lines.push(`  SOURCES NOT CHECKED: ${event.verifySkipped}`);
    for (const source of event.sources ?? []) {
      const changed = source.changed ? (source.currentSha256 === null ? '  GONE since' : '  CHANGED since') : source.changed === false ? '  unchanged' : '';
      lines.push(`  source ${source.path} (${source.size} bytes, sha256 ${source.sha256.slice(0, 12)})${changed}`);
    }
    for (const listing of event.listings ?? []) lines.push(`  listed ${listing.path}/ (${listing.count} file${listing.count === 1 ? '' : 's'}, sha256 ${listing.sha256.slice(0, 12)})${listingState(listing)}`);
    for (const entry of event.absent ?? []) {
      const state = entry.appeared === true ? '  APPEARED since' : entry.appeared === false ? '  still missing' : '';
      lines.push(`  missing ${entry.path}${state}`);
    }
    if (event.promptSha256) lines.push(`  promptSha256 ${event.promptSha256}${event.inputSha256 ? `  inputSha256 ${event.inputSha256}` : ''}`);
    if (options.prompts && event.systemPrompt !== null) {
      lines.push('', '----- systemPrompt -----', event.systemPrompt);
      // The input is printed decoded under the event's first line: not twice.
      if (event.inputPrompt) lines.push('----- inputPrompt: decoded under the event above (--json for its exact JSON lines) -----');
      lines.push('----- end -----');
    }
  });
  return `${lines.join('\n')}\n`;
}
