/**
 * The comparison page (`#/compare/<a>/<b>`): two runs of one persona or worker side by side —
 * which blocks changed, which cache boundaries moved, and why. The diff itself is
 * `compare.ts`; everything shown goes through `h()`.
 */
import { comparableEvent, compareRuns, compileMinute, minuteChange, REASON_TEXT, type BlockChange, type BoundaryChange, type ComparedEvent, type Reason, type RunComparison } from './compare.js';
import type { Api } from './api.js';
import { h, replace, type Child } from './dom.js';
import { formatNumber, formatTime, runHash, runTracePath, shortSha, type BoundaryView, type RunTrace } from './model.js';
import { definitions, outcomeClass, problemBox, type PageContext } from './views.js';

export async function renderCompare(context: PageContext, runIds: [string, string]): Promise<void> {
  const { main } = context;
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading both traces…'));
  replace(main, h('p', {}, h('a', { href: '#/runs' }, '← Runs')), h('h1', {}, 'Compare runs'), body);

  let events: Array<ComparedEvent | null>;
  try {
    events = await Promise.all(runIds.map((runId) => latestComparable(context.api, runId)));
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
  replace(body, renderComparison(compareRuns(events[0]!, events[1]!)));
}

/**
 * A run's latest event that delivered blocks, read page by page (a page at a time in memory,
 * whatever the run holds), with its place among all the run's events.
 */
async function latestComparable(api: Api, runId: string): Promise<ComparedEvent | null> {
  let found: ComparedEvent | null = null;
  let seen = 0;
  let cursor: string | null = null;
  do {
    const page: RunTrace = await api.get<RunTrace>(runTracePath(runId, { verifySources: false, cursor, limit: 100 }));
    const here = comparableEvent(page);
    if (here) found = { ...here, index: seen + here.index };
    seen += page.events.length;
    cursor = page.nextCursor;
  } while (cursor !== null);
  return found && { ...found, count: seen };
}

/** The whole comparison; exported for a page that embeds one (a future panel). */
function renderComparison(comparison: RunComparison): HTMLElement {
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
    boundariesSection(comparison.boundaries),
    blocksSection(comparison.blocks),
  );
}

function runCell(compared: ComparedEvent): HTMLElement {
  const { event } = compared;
  return h(
    'div',
    { class: 'compared-run' },
    h('a', { href: runHash(compared.runId), class: 'run-link' }, compared.runId),
    definitions([
      ['time', h('span', { title: event.at }, formatTime(event.at))],
      ['compiled for', `${compileMinute(event).replace('T', ' ')} UTC`],
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
    h('div', { class: 'side', data: { side: 'before' } }, h('h3', {}, 'Before'), runCell(comparison.before)),
    h('div', { class: 'side', data: { side: 'after' } }, h('h3', {}, 'After'), runCell(comparison.after)),
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
      request.length === 0
        ? h('span', { class: 'muted' }, 'The same request identifiers and options (request text is not recorded).')
        : [
            h('strong', {}, REASON_TEXT.request),
            h(
              'ul',
              {},
              request.map((change) => h('li', { data: { field: change.field } }, h('code', {}, change.field), ` ${change.before} → ${change.after}`)),
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
  return h('section', { class: 'differences' }, h('h3', {}, 'What differs'), h('ul', { class: 'difference-list' }, items));
}

function prefix(boundary: BoundaryView | null): string {
  if (!boundary) return '—';
  const tokens = boundary.approxTokens === null ? '' : ` · ≈${formatNumber(boundary.approxTokens)} tokens`;
  return `${formatNumber(boundary.prefixChars)} chars${tokens}${boundary.belowMinimum ? ' · below minimum' : ''}`;
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

function boundariesSection(boundaries: BoundaryChange[]): HTMLElement {
  return h(
    'section',
    { class: 'compare-boundaries' },
    h('h3', {}, 'Cache boundaries'),
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
            h('td', {}, boundary.class),
            h('td', { class: 'num' }, prefix(boundary.before)),
            h('td', { class: 'num' }, prefix(boundary.after)),
            h('td', {}, h('span', { class: `change change-${boundary.change}` }, boundary.change)),
            h('td', { class: 'why' }, boundaryWhy(boundary)),
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

function blocksSection(blocks: BlockChange[]): HTMLElement {
  return h(
    'section',
    { class: 'compare-blocks' },
    h('h3', {}, 'Blocks'),
    h(
      'table',
      { class: 'compare-table' },
      h('thead', {}, h('tr', {}, ['block', 'source', 'chars', '', 'why'].map((label) => h('th', label === 'source' ? { class: 'col-source' } : {}, label)))),
      h(
        'tbody',
        {},
        blocks.map((change) => {
          const block = (change.after ?? change.before)!.block;
          return h(
            'tr',
            { data: { kind: block.kind, change: change.change } },
            h('td', { title: block.source }, blockLabel(change)),
            h('td', { class: 'col-source' }, h('code', { class: 'source' }, block.source)),
            h('td', { class: 'num' }, chars(change)),
            h('td', {}, h('span', { class: `change change-${change.change}` }, change.change)),
            h('td', { class: 'why' }, change.reasons.map(reasonChip)),
          );
        }),
      ),
    ),
  );
}
