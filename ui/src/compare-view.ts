/**
 * The comparison page (`#/compare/<a>/<b>`): two runs of one persona or worker side by side —
 * which blocks changed, which cache boundaries moved, and why. The diff itself is
 * `compare.ts`; everything shown goes through `h()`.
 */
import { blockTextDiffs, compareRuns, latestComparable, minuteChange, REASON_TEXT, type BlockChange, type BlockTextDiff, type BoundaryChange, type ComparedEvent, type Reason, type RunComparison } from './compare.js';
import type { Api } from './api.js';
import { h, replace, type Child } from './dom.js';
import { eventMinute, formatNumber, formatTime, prefixTokens, runHash, runTracePath, shortSha, tokensNote, type BoundaryView, type RunTrace } from './model.js';
import { diffHunks, type DiffLine } from './text-diff.js';
import { definitions, outcomeClass, problemBox, sha, type PageContext } from './views.js';

export async function renderCompare(context: PageContext, runIds: [string, string]): Promise<void> {
  const { main } = context;
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading both traces…'));
  replace(main, h('p', {}, h('a', { href: '#/runs' }, '← Runs')), h('h1', {}, 'Compare runs'), body);

  let events: Array<ComparedEvent | null>;
  try {
    events = await Promise.all(runIds.map((runId) => readComparable(context.api, runId)));
  } catch (error) {
    if (context.current()) replace(body, problemBox(error));
    return;
  }
  if (!context.current()) return;
  const missing = runIds.filter((_, i) => events[i] === null);
  if (missing.length > 0) {
    replace(body, h('div', { class: 'problem', role: 'alert' }, h('strong', {}, 'Nothing to compare'), h('p', {}, `${missing.join(' and ')} delivered no prompt (only failed compiles).`)));
    return;
  }
  const comparison = compareRuns(events[0]!, events[1]!);
  const diffs = new Map<number, HTMLElement>();
  replace(body, renderComparison(comparison, diffs));
  await showTextDiffs(comparison, diffs);
}

/** A run's latest event that delivered blocks, read a page of 100 events at a time. */
function readComparable(api: Api, runId: string): Promise<ComparedEvent | null> {
  return latestComparable(runId, (cursor) => api.get<RunTrace>(runTracePath(runId, { verifySources: false, cursor, limit: 100 })));
}

/** sha256 of a text's UTF-8 bytes, by WebCrypto; null where the page is not a secure context (https or localhost). */
async function sha256Hex(text: string): Promise<string | null> {
  if (typeof crypto === 'undefined' || crypto.subtle === undefined) return null;
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, '0')).join('');
}

/** Fills each changed block's diff row: its delivered text against the other run's, each side checked against its digest first. */
async function showTextDiffs(comparison: RunComparison, cells: Map<number, HTMLElement>): Promise<void> {
  let secure = true;
  const texts = await blockTextDiffs(comparison, async (text) => {
    const digest = await sha256Hex(text);
    if (digest === null) secure = false;
    return digest ?? '';
  });
  for (const [index, cell] of cells) {
    const result: BlockTextDiff = secure
      ? (texts.get(index) ?? { kind: 'not-shown', reason: 'no text' })
      : { kind: 'not-shown', reason: 'this page is not a secure context (https or localhost), so the texts cannot be checked against their digests' };
    replace(cell, textDiff(result, comparison.blocks[index]!));
  }
}

/** The content digests a shown text was checked against, labelled as the run page labels them: before → after. */
function checkedAgainst(change: BlockChange): Child[] {
  const side = (name: 'before' | 'after') => {
    const place = change[name];
    return place ? h('span', { class: 'diff-sha', data: { side: name } }, sha(place.block.sha256)) : h('span', { class: 'muted' }, `no ${name} block`);
  };
  return [side('before'), ' → ', side('after')];
}

function diffLine(line: DiffLine): HTMLElement {
  const sign = line.op === 'added' ? '+' : line.op === 'removed' ? '−' : ' ';
  const text = line.changed
    ? [line.text.slice(0, line.changed[0]), h('mark', {}, line.text.slice(line.changed[0], line.changed[1])), line.text.slice(line.changed[1])]
    : [line.text];
  return h('span', { class: `diff-line diff-${line.op}` }, h('span', { class: 'diff-sign' }, sign), ...text);
}

/** A block's text diff: its changed lines with two unchanged ones around them, or why it is not shown. */
function textDiff(result: BlockTextDiff, change: BlockChange): HTMLElement {
  if (result.kind === 'not-shown') return h('p', { class: 'diff-note muted small' }, `Text not shown: ${result.reason}.`);
  const { diff } = result;
  if (diff.kind === 'same') return h('p', { class: 'diff-note muted small' }, 'The same text: only its label or encoding differs.');
  if (diff.kind === 'too-different') return h('p', { class: 'diff-note muted small' }, `Changed, too different to show (${diff.reason}).`);
  return h(
    'div',
    { class: 'diff' },
    h('p', { class: 'diff-note muted small' }, `${diff.added} line${diff.added === 1 ? '' : 's'} added, ${diff.removed} removed; each text checked against its sha256: `, checkedAgainst(change)),
    h(
      'pre',
      { class: 'diff-text' },
      diffHunks(diff.lines).map((item) =>
        item.op === 'skip' ? h('span', { class: 'diff-line diff-skip' }, `⋯ ${formatNumber(item.lines)} unchanged line${item.lines === 1 ? '' : 's'}`) : diffLine(item),
      ),
    ),
  );
}

/** The whole comparison; `diffs` receives, per changed block, the cell its text diff goes in. */
function renderComparison(comparison: RunComparison, diffs: Map<number, HTMLElement>): HTMLElement {
  const changed = comparison.blocks.filter((block) => block.change !== 'unchanged');
  const moved = comparison.boundaries.filter((boundary) => boundary.change !== 'held');
  const routeKeyHeld = comparison.routeKey.before === comparison.routeKey.after;
  return h(
    'div',
    { class: 'comparison' },
    runsSection(comparison),
    comparison.sameSubject
      ? null
      : h('p', { class: 'verified bad', role: 'alert' }, 'These runs compile different subjects: blocks are paired by kind, and few will match.'),
    h(
      'p',
      { class: 'compare-summary' },
      `${changed.length} of ${comparison.blocks.length} blocks differ; ${moved.length} of ${comparison.boundaries.length} cache boundaries moved; `,
      routeKeyHeld ? 'the route key held.' : h('strong', {}, 'the route key changed (a new provider cache).'),
    ),
    differencesSection(comparison),
    boundariesSection(comparison),
    blocksSection(comparison.blocks, diffs),
  );
}

function runCell(compared: ComparedEvent): HTMLElement {
  const { event } = compared;
  return h(
    'div',
    { class: 'compared-run' },
    h('a', { href: runHash(compared.runId), class: 'run-link' }, compared.runId),
    definitions([
      ['compiled for', eventMinute(event)],
      ['traced', h('span', { title: event.at }, formatTime(event.at))],
      ['route', h('code', {}, event.route)],
      [event.subject.kind, event.subject.id],
      ['event', `${compared.index + 1} of ${compared.count}`],
      ['status', h('span', {}, h('span', { class: `status ${outcomeClass(event.outcome)}` }, String(event.status)), ' ', event.outcome)],
      ['route key', typeof event.cache?.['routeKey'] === 'string' ? h('code', {}, event.cache['routeKey'] as string) : null],
    ]),
  );
}

function runsSection(comparison: RunComparison): HTMLElement {
  return h(
    'section',
    { class: 'compared-runs' },
    h('div', { class: 'side', data: { side: 'before' } }, h('h2', {}, 'Before'), runCell(comparison.before)),
    h('div', { class: 'side', data: { side: 'after' } }, h('h2', {}, 'After'), runCell(comparison.after)),
  );
}

function reasonChip(reason: Reason): HTMLElement {
  return h(
    'span',
    { class: `reason reason-${reason.kind}`, data: { reason: reason.kind } },
    h('strong', {}, REASON_TEXT[reason.kind]),
    reason.details.length > 0 ? `: ${reason.details.join(', ')}` : null,
  );
}

function differencesSection(comparison: RunComparison): HTMLElement {
  const { sources, request, minute, realtime } = comparison;
  const items: Child[] = [];
  items.push(
    h(
      'li',
      { data: { difference: 'minute' } },
      minute.before === minute.after
        ? h('span', { class: 'muted' }, `Compiled for the same minute (${minute.before.replace('T', ' ')} UTC).`)
        : reasonChip({ kind: 'minute', details: [minuteChange(minute)] }),
    ),
  );
  items.push(
    h(
      'li',
      { data: { difference: 'sources' } },
      sources.length === 0
        ? h('span', { class: 'muted' }, 'The same brain files, with the same bytes.')
        : [
            h('strong', {}, REASON_TEXT.sources),
            h(
              'ul',
              {},
              sources.map((source) =>
                h(
                  'li',
                  { data: { path: source.path } },
                  h('code', {}, source.path),
                  ` ${source.change}`,
                  source.names?.length ? `: ${source.names.join(', ')}` : null,
                  h('span', { class: 'muted small' }, ` (${shortSha(source.before)} → ${shortSha(source.after)})`),
                ),
              ),
            ),
          ],
    ),
  );
  items.push(
    h(
      'li',
      { data: { difference: 'request' } },
      request.length === 0 && comparison.requestText.length === 0
        ? h('span', { class: 'muted' }, 'The same request identifiers and options, and the same request text.')
        : request.length === 0
          ? [h('strong', {}, REASON_TEXT.request), `: the ${comparison.requestText.join(' and ')} text (not a recorded field: its block differs, below).`]
          : [
            h('strong', {}, REASON_TEXT.request),
            h(
              'ul',
              {},
              request.map((change) => h('li', { data: { field: change.field } }, h('code', {}, change.field), ` ${change.before} → ${change.after}`)),
              comparison.requestText.map((field) => h('li', { data: { field } }, h('code', {}, field), ' text (not a recorded field: its block differs, below)')),
            ),
          ],
    ),
  );
  if (realtime) {
    const voice = realtime.voice.before === realtime.voice.after ? `voice ${realtime.voice.after ?? '—'} held` : `voice ${realtime.voice.before ?? '—'} → ${realtime.voice.after ?? '—'}`;
    const tools = !realtime.toolsChanged
      ? 'the same tools'
      : [
          'tools changed',
          realtime.added.length ? ` (+${realtime.added.join(', +')})` : '',
          realtime.removed.length ? ` (−${realtime.removed.join(', −')})` : '',
          !realtime.added.length && !realtime.removed.length ? ' (the same names, other definitions)' : '',
        ].join('');
    items.push(h('li', { data: { difference: 'realtime' } }, `Realtime session: ${voice}; ${tools}.`));
  }
  return h('section', { class: 'differences' }, h('h2', {}, 'What differs'), h('ul', { class: 'difference-list' }, items));
}

/** A prefix's size: its characters and its tokens as its run's plan counted them (the figure the run page shows). */
function prefix(boundary: BoundaryView | null, tokenizer: string | null): Child {
  if (!boundary) return '—';
  const tokens = prefixTokens(boundary, tokenizer);
  return [
    h('span', { class: 'nowrap' }, `${formatNumber(boundary.prefixChars)} chars`),
    tokens === null ? null : [' · ', h('span', { class: 'nowrap', title: tokensNote(tokenizer) }, `${tokens} tokens`)],
    boundary.belowMinimum ? [' · ', h('span', { class: 'nowrap muted' }, 'below minimum')] : null,
  ];
}

function blockLabel(change: BlockChange): string {
  const side = change.after ?? change.before!;
  return `#${side.index} ${change.kind}`;
}

function boundaryWhy(boundary: BoundaryChange): Child {
  if (boundary.change === 'held') return h('span', { class: 'muted' }, 'same prefix, same sha256: still cached');
  if (boundary.change !== 'moved') return `only the ${boundary.change === 'added' ? 'newer' : 'older'} run has this cache class`;
  if (!boundary.cause) return h('span', { class: 'muted' }, 'the prefix differs outside the recorded blocks');
  return [h('span', { class: 'cause' }, `${blockLabel(boundary.cause)} ${boundary.cause.change}: `), boundary.cause.reasons.map(reasonChip)];
}

function boundariesSection(comparison: RunComparison): HTMLElement {
  const { boundaries, tokenizer } = comparison;
  return h(
    'section',
    { class: 'compare-boundaries' },
    h('h2', {}, 'Cache boundaries'),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'compare-table' },
        h('thead', {}, h('tr', {}, ['class', 'before', 'after', '', 'why'].map((label) => h('th', {}, label)))),
        h(
          'tbody',
          {},
          boundaries.map((boundary) =>
            h(
              'tr',
              { data: { boundary: boundary.class, change: boundary.change } },
              h('td', { class: 'nowrap' }, boundary.class),
              h('td', { class: 'num', data: { label: 'before' } }, prefix(boundary.before, tokenizer.before)),
              h('td', { class: 'num', data: { label: 'after' } }, prefix(boundary.after, tokenizer.after)),
              h('td', {}, h('span', { class: `change change-${boundary.change}` }, boundary.change)),
              h('td', { class: 'why' }, boundaryWhy(boundary)),
            ),
          ),
        ),
      ),
    ),
  );
}

function chars(change: BlockChange): string {
  const [then, now] = [change.before?.block.chars, change.after?.block.chars];
  if (then === undefined) return `— → ${formatNumber(now!)}`;
  if (now === undefined) return `${formatNumber(then)} → —`;
  return then === now ? formatNumber(now) : `${formatNumber(then)} → ${formatNumber(now)}`;
}

function blocksSection(blocks: BlockChange[], diffs: Map<number, HTMLElement>): HTMLElement {
  const rows: HTMLElement[] = [];
  blocks.forEach((change, index) => {
    const block = (change.after ?? change.before)!.block;
    rows.push(
      h(
        'tr',
        { data: { kind: block.kind, change: change.change } },
        h('td', { class: 'nowrap', title: block.source }, blockLabel(change)),
        h('td', { class: 'col-source' }, h('code', { class: 'source' }, block.source)),
        h('td', { class: 'num', data: { label: 'chars' } }, chars(change)),
        h('td', {}, h('span', { class: `change change-${change.change}` }, change.change)),
        h('td', { class: 'why' }, change.reasons.map(reasonChip)),
      ),
    );
    if (change.change === 'unchanged') return;
    const cell = h('td', { class: 'block-diff-cell' }, h('p', { class: 'muted small' }, 'Checking the texts against their digests…'));
    cell.colSpan = 5;
    diffs.set(index, cell);
    rows.push(h('tr', { class: 'block-diff', data: { diffKind: block.kind } }, cell));
  });
  return h(
    'section',
    { class: 'compare-blocks' },
    h('h2', {}, 'Blocks'),
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        { class: 'compare-table' },
        h('thead', {}, h('tr', {}, ['block', 'source', 'chars', '', 'why'].map((label) => h('th', label === 'source' ? { class: 'col-source' } : {}, label)))),
        h('tbody', {}, rows),
      ),
    ),
  );
}
