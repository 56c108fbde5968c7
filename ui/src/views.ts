/**
 * The two pages: the runs list and one run. Everything shown comes from the JSON API and
 * goes through `h()`, so brain text, prompts and ids are only ever text nodes.
 */
import { ApiError, type Api } from './api.js';
import { h, replace, type Child } from './dom.js';
import {
  AUTHORITIES,
  compareHash,
  formatNumber,
  formatTime,
  layoutEvent,
  lineRangeText,
  percentOf,
  runHash,
  runListPath,
  runsHash,
  runTracePath,
  sessionJson,
  shortSha,
  type BlockView,
  type BoundaryView,
  type ChainStatus,
  type Hud,
  type EventLayout,
  type Recall,
  type Receipts,
  type RunFilter,
  type RunList,
  type RunTrace,
  type TraceAbsent,
  type TraceEvent,
  type TraceListing,
  type TraceRealtime,
  type TraceSource,
} from './model.js';

export interface PageContext {
  api: Api;
  main: HTMLElement;
  /** False once the person navigated elsewhere: a late answer must not overwrite the new page. */
  current(): boolean;
}

const PAGE_SIZE = 25;
const OUTCOMES = ['delivered', 'not-modified', 'failed'] as const;

function authorityClass(authority: string): string {
  return (AUTHORITIES as readonly string[]).includes(authority) ? `auth-${authority}` : 'auth-unknown';
}

export function outcomeClass(outcome: string): string {
  return (OUTCOMES as readonly string[]).includes(outcome) ? `outcome-${outcome}` : 'outcome-unknown';
}

export function problemBox(error: unknown): HTMLElement {
  if (error instanceof ApiError) {
    const { problem } = error;
    return h(
      'div',
      { class: 'problem', role: 'alert' },
      h('strong', {}, `${problem.status ?? error.status} ${problem.title ?? 'Error'}`),
      problem.code ? h('code', { class: 'problem-code' }, problem.code) : null,
      problem.detail ? h('p', {}, problem.detail) : null,
      problem.errors?.length ? h('ul', {}, problem.errors.map((item) => h('li', {}, h('code', {}, item.path), ' ', item.message))) : null,
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return h('div', { class: 'problem', role: 'alert' }, h('strong', {}, 'Could not reach the service'), h('p', {}, message));
}

export function definitions(entries: Array<[string, Child]>): HTMLElement {
  return h(
    'dl',
    { class: 'facts' },
    entries.filter(([, value]) => value !== null && value !== undefined && value !== '').map(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]),
  );
}

export function sha(value: string | null | undefined, label = 'sha256'): HTMLElement {
  return h('code', { class: 'sha', title: value ? `${label} ${value}` : `no ${label}` }, shortSha(value));
}

// ----- runs list -----

export async function renderRunList(context: PageContext, filter: RunFilter): Promise<void> {
  const { main } = context;
  const field = (name: keyof RunFilter, label: string, placeholder: string) =>
    h('label', {}, label, h('input', { name, value: filter[name] ?? '', placeholder, autocomplete: 'off' }));
  const outcome = h(
    'select',
    { name: 'outcome' },
    h('option', { value: '' }, 'any'),
    OUTCOMES.map((value) => {
      const option = h('option', { value }, value);
      option.selected = filter.outcome === value;
      return option;
    }),
  );
  const form = h(
    'form',
    {
      class: 'filters',
      onSubmit: (event) => {
        event.preventDefault();
        const data = new FormData(form);
        const next: RunFilter = {};
        for (const key of ['persona', 'worker', 'status', 'outcome'] as const) {
          const value = String(data.get(key) ?? '').trim();
          if (value) next[key] = value;
        }
        location.hash = runsHash(next);
      },
    },
    field('persona', 'persona', 'mars'),
    field('worker', 'worker', 'scribe'),
    field('status', 'status', '200'),
    h('label', {}, 'outcome', outcome),
    h('button', { type: 'submit' }, 'Filter'),
    h('a', { class: 'button secondary', href: '#/runs' }, 'Clear'),
  );
  const results = h('div', { class: 'results' }, h('p', { class: 'muted' }, 'Loading runs…'));
  replace(main, h('h1', {}, 'Runs'), form, results);

  let list: RunList;
  try {
    list = await context.api.get<RunList>(runListPath(filter, PAGE_SIZE));
  } catch (error) {
    if (context.current()) replace(results, problemBox(error));
    return;
  }
  if (!context.current()) return;

  const filtered = Object.keys(filter).some((key) => key !== 'cursor');
  if (list.runs.length === 0) {
    replace(
      results,
      h(
        'p',
        { class: 'empty' },
        filtered || filter.cursor
          ? 'No runs match.'
          : 'No runs yet. Every compile (GET /context/mars, POST /compile, …) is traced and shows up here.',
      ),
    );
    return;
  }
  // Two runs picked here open their comparison; a third pick replaces the oldest.
  const picked: HTMLInputElement[] = [];
  const compareButton = h('button', { type: 'button', class: 'compare-picked', title: 'Compare the two runs picked below' }, 'Compare 2 runs');
  compareButton.disabled = true;
  const pickedNote = h('span', { class: 'muted small' }, 'Pick two runs of one persona or worker to compare them.');
  compareButton.addEventListener('click', () => {
    if (picked.length === 2) location.hash = compareHash(picked[0]!.value, picked[1]!.value);
  });
  const pick = (box: HTMLInputElement) => {
    const at = picked.indexOf(box);
    if (at >= 0) picked.splice(at, 1);
    if (box.checked) picked.push(box);
    while (picked.length > 2) picked.shift()!.checked = false;
    compareButton.disabled = picked.length !== 2;
  };
  const pickBox = (runId: string) => {
    const box = h('input', { type: 'checkbox', name: 'compare', value: runId, ariaLabel: `pick run ${runId} to compare` });
    box.addEventListener('change', () => pick(box));
    return box;
  };
  // Columns a narrow window drops (class `optional`): time, subject, status and run id always stay.
  const columns: Array<[string, string]> = [
    ['', 'pick'],
    ['time', 'time'],
    ['persona / worker', 'subject'],
    ['caller', 'optional'],
    ['surface', 'optional'],
    ['status', 'status'],
    ['size', 'optional'],
    ['events', 'optional'],
    ['run id', 'run-id'],
  ];
  const table = h(
    'table',
    { class: 'runs' },
    h('thead', {}, h('tr', {}, columns.map(([label, name]) => h('th', { class: `col-${name}`, ...(label ? {} : { ariaLabel: 'compare' }) }, label)))),
    h(
      'tbody',
      {},
      list.runs.map((run) =>
        h(
          'tr',
          { data: { runId: run.runId } },
          h('td', { class: 'col-pick' }, run.outcome === 'failed' ? null : pickBox(run.runId)),
          h('td', { class: 'col-time', title: run.at }, formatTime(run.at)),
          h('td', { class: 'col-subject' }, h('span', { class: 'subject-kind' }, run.subject.kind), ' ', run.subject.id),
          h('td', { class: 'col-optional col-caller' }, run.caller ?? '—'),
          h('td', { class: 'col-optional' }, run.surface ?? '—'),
          h('td', { class: 'col-status' }, h('span', { class: `status ${outcomeClass(run.outcome)}` }, String(run.status)), ' ', h('span', { class: 'outcome' }, run.outcome)),
          h('td', { class: 'col-optional num' }, run.outcome === 'failed' ? '—' : `${formatNumber(run.chars)} chars`),
          h('td', { class: 'col-optional num' }, String(run.events)),
          h('td', { class: 'col-run-id' }, h('a', { class: 'run-link', href: runHash(run.runId) }, run.runId)),
        ),
      ),
    ),
  );
  const pager = h(
    'nav',
    { class: 'pager' },
    filter.cursor ? h('a', { class: 'button secondary', href: runsHash({ ...filter, cursor: '' }) }, '← Newest') : null,
    list.nextCursor ? h('a', { class: 'button', href: runsHash({ ...filter, cursor: list.nextCursor }), id: 'older' }, 'Older →') : null,
  );
  replace(results, h('div', { class: 'compare-bar' }, compareButton, pickedNote), h('div', { class: 'table-wrap' }, table), pager);
}

// ----- one run -----

export async function renderRun(context: PageContext, runId: string): Promise<void> {
  const { main } = context;
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading the trace…'));
  replace(main, h('p', {}, h('a', { href: '#/runs' }, '← Runs')), h('h1', {}, 'Run ', h('code', {}, runId)), body);

  let trace: RunTrace;
  try {
    trace = await context.api.get<RunTrace>(runTracePath(runId));
  } catch (error) {
    if (context.current()) replace(body, problemBox(error));
    return;
  }
  if (!context.current()) return;
  const count = trace.events.length;
  const single = count === 1 && trace.nextCursor === null;
  const events = h('div', { class: 'events' }, trace.events.map((event, i) => renderEvent(event, single ? null : `Event ${i + 1}`)));
  replace(
    body,
    pairLink(trace),
    chainSection(trace.chain, trace.nextCursor !== null),
    trace.events.some((event) => event.blocks?.length) ? comparePicker(context, trace) : null,
    single ? null : h('p', { class: 'muted' }, trace.nextCursor === null ? `${count} events, in order.` : `Events in order, ${count} at a time.`),
    events,
    trace.nextCursor === null ? null : laterEvents(context, runId, trace.nextCursor, count, events),
  );
}

/**
 * The other run of a connect-and-refresh pair, linked both ways: a refresh run names its
 * parent in its events; a persona connect's refreshes, if it had any, are in run
 * `<runId>:refresh` (not looked up: a run that never was reads as a 404 there).
 */
function pairLink(trace: RunTrace): HTMLElement | null {
  const parent = trace.events.find((event) => event.parentRunId !== undefined)?.parentRunId;
  if (parent !== undefined) return h('p', { class: 'run-pair' }, 'Mid-call refreshes of the connect in run ', h('a', { href: runHash(parent), class: 'parent-run' }, parent), '.');
  if (!trace.events.some((event) => event.subject.kind === 'persona' && event.route === `GET /context/${event.subject.id}`)) return null;
  const child = `${trace.runId}:refresh`;
  return h('p', { class: 'run-pair muted' }, 'Its mid-call refreshes, if the call made any: run ', h('a', { href: runHash(child), class: 'refresh-run' }, child), '.');
}

/**
 * The button that fetches the run's next page and adds it below, with what the chains around
 * its events say: the page never holds more of a long run than the person asked to see.
 */
function laterEvents(context: PageContext, runId: string, cursor: string, shown: number, events: HTMLElement): HTMLElement {
  const more = h('nav', { class: 'pager' });
  const button: HTMLButtonElement = h('button', { type: 'button', class: 'later-events', id: 'later-events' }, 'Later events →');
  button.addEventListener('click', async () => {
    button.disabled = true;
    let page: RunTrace;
    try {
      page = await context.api.get<RunTrace>(runTracePath(runId, { cursor }));
    } catch (error) {
      if (context.current()) replace(more, problemBox(error));
      return;
    }
    if (!context.current()) return;
    events.append(
      h('div', { class: 'page-chain' }, chainSection(page.chain, true)),
      ...page.events.map((event, i) => renderEvent(event, `Event ${shown + i + 1}`)),
    );
    more.replaceWith(page.nextCursor === null ? h('p', { class: 'muted' }, `${shown + page.events.length} events, in order: the last.`) : laterEvents(context, runId, page.nextCursor, shown + page.events.length, events));
  });
  more.append(button);
  return more;
}

/** Other runs of the same persona or worker, each a link to its comparison with this run; listed on demand. */
function comparePicker(context: PageContext, trace: RunTrace): HTMLElement {
  const subject = trace.events.at(-1)!.subject;
  const list = h('div', { class: 'compare-list' });
  const button = h('button', { type: 'button', class: 'secondary small compare-with' }, `Compare with another run of ${subject.id}…`);
  button.addEventListener('click', async () => {
    button.disabled = true;
    replace(list, h('p', { class: 'muted small' }, 'Loading runs…'));
    const filter = subject.kind === 'persona' ? { persona: subject.id } : { worker: subject.id };
    let runs: RunList;
    try {
      runs = await context.api.get<RunList>(runListPath(filter, PAGE_SIZE));
    } catch (error) {
      if (context.current()) replace(list, problemBox(error));
      button.disabled = false;
      return;
    }
    if (!context.current()) return;
    const others = runs.runs.filter((run) => run.runId !== trace.runId && run.outcome !== 'failed');
    replace(
      list,
      others.length === 0
        ? h('p', { class: 'muted small' }, `No other run of ${subject.id} to compare with (failed runs delivered nothing).`)
        : h(
            'ul',
            { class: 'compare-candidates' },
            others.map((run) =>
              h(
                'li',
                { data: { runId: run.runId } },
                h('a', { href: compareHash(run.runId, trace.runId) }, run.runId),
                h('span', { class: 'muted small' }, ` · ${formatTime(run.at)} · ${run.status} ${run.outcome}`),
              ),
            ),
          ),
    );
  });
  return h('section', { class: 'compare-with-section' }, h('h3', {}, 'Compare ', button), list);
}

function renderEvent(event: TraceEvent, heading: string | null): HTMLElement {
  const layout = layoutEvent(event);
  const subjectLabel = event.subject.kind === 'persona' ? 'persona' : 'worker';
  return h(
    'article',
    { class: 'event', data: { outcome: event.outcome } },
    heading ? h('h2', {}, heading) : null,
    h(
      'section',
      { class: 'summary' },
      definitions([
        ['time', h('span', { title: event.at }, formatTime(event.at))],
        ['route', h('code', {}, event.route)],
        [subjectLabel, event.subject.id],
        ['caller', event.caller ? h('span', { class: 'caller' }, event.caller) : null],
        ['surface', event.surface ?? null],
        ['voice', event.realtime ? h('span', { class: 'voice' }, event.realtime.voice) : null],
        ['tools', event.realtime ? h('span', { class: 'tool-names' }, event.realtime.toolNames.join(', ') || 'none') : null],
        ['status', h('span', {}, h('span', { class: `status ${outcomeClass(event.outcome)}` }, String(event.status)), ' ', event.outcome)],
        ['size', event.outcome === 'failed' ? 'nothing delivered' : `${formatNumber(event.chars)} chars (systemPrompt + inputPrompt)`],
        ['parent run', event.parentRunId ? h('a', { href: runHash(event.parentRunId), class: 'parent-run' }, event.parentRunId) : null],
        [
          'refresh',
          event.refresh
            ? h(
                'span',
                { class: 'refresh-changes' },
                event.refresh.changes.length === 0
                  ? 'no change since the connect'
                  : event.refresh.changes.map((change) => `${change.block}: +${change.added} −${change.removed} lines`).join(' · ') + ` (${formatNumber(event.refresh.chars)} chars, ${event.refresh.provider})`,
              )
            : null,
        ],
        ['request', requestFacts(event.request)],
        ['request id', event.requestId ? h('code', { class: 'request-id' }, event.requestId) : null],
        ['traceparent', event.traceparent ? h('code', { class: 'traceparent' }, event.traceparent) : null],
        ['timing', event.timing ? Object.entries(event.timing).map(([key, value]) => `${key} ${value} ms`).join(' · ') : null],
      ]),
    ),
    event.error
      ? h(
          'div',
          { class: 'problem failure', role: 'alert' },
          h('strong', {}, `Failed: ${event.error.status}`),
          h('code', { class: 'problem-code' }, event.error.code),
          h('p', {}, event.error.detail),
          h('p', { class: 'muted' }, 'Nothing was delivered for this compile.'),
        )
      : null,
    verification(event),
    event.blocks?.length ? budgetSection(layout) : null,
    event.blocks?.length ? blocksSection(layout) : null,
    event.blocks?.length || layout.boundaries.length ? cacheSection(layout) : null,
    digestsSection(event),
    redactionsAndWarnings(event, layout),
    event.recall || event.receipts ? governanceSection(event.recall, event.receipts) : null,
    event.verifySkipped ? h('p', { class: 'verified bad verify-skipped', role: 'alert' }, `✗ Brain files not checked: ${event.verifySkipped}.`) : null,
    event.sources ? sourcesSection(event.sources, event.absent ?? [], event.listings ?? []) : null,
    event.realtime ? realtimeSection(event, event.realtime) : null,
    event.hud || event.hudRejected ? hudSection(event.hud, event.hudRejected) : null,
    event.systemPrompt !== null ? promptSection(event) : null,
  );
}

function requestFacts(request: Record<string, unknown>): Child {
  const entries = Object.entries(request);
  if (entries.length === 0) return null;
  return h(
    'span',
    { class: 'request' },
    entries.map(([key, value]) => h('span', { class: 'pair' }, h('span', { class: 'key' }, key), ' ', typeof value === 'string' ? value : JSON.stringify(value))),
  );
}

const CHAIN_TEXT: Record<ChainStatus, string> = {
  signed: '✓ Chain signed: every event holds its HMAC link under the service’s key, and nothing around them is missing.',
  linked: 'Chain linked, without a key: consistent, but anyone who can write the trace directory could have recomputed it.',
  unchained: 'No chain: these events were written before traces were chained.',
  unverifiable: 'Chain unverifiable: signed with a key this service does not hold.',
  broken: '✗ Chain broken: events were altered, inserted, removed or reordered, or a trace file is missing or cut.',
};

/** What the chains say; `paged`: about the events of this page (a long run is checked a page at a time). */
function chainSection(chain: RunTrace['chain'], paged = false): HTMLElement {
  const bad = chain.status === 'broken';
  return h(
    'section',
    { class: `chain chain-${chain.status}`, data: { chain: chain.status }, ...(bad ? { role: 'alert' } : {}) },
    h('p', { class: `verified ${chain.status === 'signed' ? 'ok' : bad ? 'bad' : 'muted'}` }, paged ? `These events: ${CHAIN_TEXT[chain.status]}` : CHAIN_TEXT[chain.status]),
    chain.problems.length > 0 ? h('ul', { class: 'chain-problems' }, chain.problems.map((problem) => h('li', {}, problem))) : null,
    chain.notes.length > 0 ? h('ul', { class: 'chain-notes muted' }, chain.notes.map((note) => h('li', {}, note))) : null,
  );
}

function verification(event: TraceEvent): Child {
  if (event.chain === 'broken') {
    return h('p', { class: 'verified bad', role: 'alert' }, '✗ This event was altered, forged or is out of place: its chain link does not hold.');
  }
  if (event.verified === true) return h('p', { class: 'verified ok' }, '✓ The rebuilt prompts match their recorded sha256 digests.');
  if (event.verified === false && event.chain !== 'signed' && event.chain !== 'linked') {
    return h('p', { class: 'verified bad', role: 'alert' }, `✗ Not vouched for: the service has a signing key, and this event’s chain is ${event.chain}.`);
  }
  if (event.verified === false) {
    return h('p', { class: 'verified bad', role: 'alert' }, '✗ The stored prompt text does not match its recorded digests (a segment is missing or was altered).');
  }
  return null;
}

function budgetSection(layout: EventLayout): HTMLElement {
  const { scaleChars } = layout;
  const bar = h('div', { class: 'bar', role: 'img', ariaLabel: 'blocks as shares of the budget, with cache boundaries' });
  for (const view of layout.blocks) {
    const share = percentOf(view.chars, scaleChars);
    const segment = h('div', {
      class: `bar-block ${authorityClass(view.block.authority)}`,
      title: `#${view.index} ${view.block.kind} · ${view.block.authority} · ${formatNumber(view.chars)} chars (${share.toFixed(1)}% of the budget)`,
      data: { block: String(view.index) },
    });
    segment.style.left = `${percentOf(view.start, scaleChars)}%`;
    segment.style.width = `${share}%`;
    bar.append(segment);
  }
  const lane = h('div', { class: 'boundary-lane' });
  layout.boundaries.forEach((boundary, row) => {
    const left = percentOf(boundary.prefixChars, scaleChars);
    const flag = boundary.belowMinimum === true;
    const marker = h('div', { class: `bar-boundary${flag ? ' below-minimum' : ''}`, title: `cache boundary after ${boundary.afterBlock} (${boundary.class})` });
    marker.style.left = `${left}%`;
    bar.append(marker);
    const label = h(
      'div',
      { class: `boundary-label${left > 55 ? ' flip' : ''}${flag ? ' below-minimum' : ''}`, data: { boundary: boundary.class } },
      h('span', { class: 'boundary-class' }, boundary.class),
      ` · ${boundaryTokens(boundary, layout.tokenizer)}`,
      flag ? h('span', { class: 'flag' }, `below ${layout.minimumTokens ? formatNumber(layout.minimumTokens) : 'the'}-token minimum`) : null,
    );
    label.style.left = `${left}%`;
    label.style.top = `${row * 1.7}em`;
    lane.append(label);
  });
  lane.style.height = `${Math.max(1, layout.boundaries.length) * 1.7 + 0.3}em`;

  const limit = layout.limitChars;
  const kinds = new Set(layout.blocks.map((view) => view.block.authority));
  return h(
    'section',
    { class: 'budget' },
    h('h3', {}, 'Budget'),
    h(
      'p',
      { class: 'budget-figures' },
      limit !== null
        ? `${formatNumber(layout.usedChars)} of ${formatNumber(limit)} chars used (${percentOf(layout.usedChars, limit).toFixed(1)}%), ${formatNumber(limit - layout.usedChars)} left.`
        : `${formatNumber(layout.usedChars)} chars used; no limit recorded.`,
      Object.entries(layout.omitted).some(([, count]) => count > 0)
        ? ` Left out to fit: ${Object.entries(layout.omitted)
            .filter(([, count]) => count > 0)
            .map(([kind, count]) => `${count} ${kind}`)
            .join(', ')}.`
        : null,
    ),
    h('div', { class: 'bar-wrap' }, bar, lane),
    h(
      'p',
      { class: 'legend' },
      [...AUTHORITIES, ...[...kinds].filter((kind) => !(AUTHORITIES as readonly string[]).includes(kind))].map((authority) =>
        h('span', { class: 'legend-item' }, h('span', { class: `swatch ${authorityClass(authority)}` }), authority),
      ),
      h('span', { class: 'legend-item' }, h('span', { class: 'swatch boundary' }), 'cache boundary'),
    ),
  );
}

/**
 * The prefix's tokens as the plan counted them: exact (no ≈) when its tokenizer is a real
 * one; the estimate for a plan counted without one, or an event from before exact counts.
 */
function tokenCount(boundary: BoundaryView, tokenizer: string | null): string | null {
  if (boundary.tokens !== null) return tokenizer !== null && tokenizer !== 'estimate' ? formatNumber(boundary.tokens) : `≈${formatNumber(boundary.tokens)}`;
  return boundary.approxTokens === null ? null : `≈${formatNumber(boundary.approxTokens)}`;
}

function boundaryTokens(boundary: BoundaryView, tokenizer: string | null): string {
  const tokens = tokenCount(boundary, tokenizer);
  return `${tokens === null ? '' : `${tokens} tokens, `}${formatNumber(boundary.prefixChars)} chars`;
}

function blocksSection(layout: EventLayout): HTMLElement {
  const byIndex = new Map<number, BoundaryView[]>();
  for (const boundary of layout.boundaries) {
    if (boundary.blockIndex === null) continue;
    byIndex.set(boundary.blockIndex, [...(byIndex.get(boundary.blockIndex) ?? []), boundary]);
  }
  const list = h('ol', { class: 'blocks' });
  for (const view of layout.blocks) {
    list.append(blockItem(view, layout.scaleChars));
    for (const boundary of byIndex.get(view.index) ?? []) {
      list.append(
        h(
          'li',
          { class: `boundary-row${boundary.belowMinimum ? ' below-minimum' : ''}` },
          `cache boundary · ${boundary.class} · ${boundaryTokens(boundary, layout.tokenizer)}`,
          boundary.belowMinimum ? h('span', { class: 'flag' }, 'below minimum: not cached') : null,
          ' ',
          sha(boundary.prefixSha256, 'prefix sha256'),
        ),
      );
    }
  }
  const expand = h('button', {
    type: 'button',
    class: 'secondary small',
    onClick: () => {
      const open = expand.textContent === 'Expand all';
      for (const details of list.querySelectorAll('details')) details.open = open;
      expand.textContent = open ? 'Collapse all' : 'Expand all';
    },
  }, 'Expand all');
  return h('section', { class: 'blocks-section' }, h('h3', {}, `Blocks (${layout.blocks.length}) `, expand), list);
}

function blockItem(view: BlockView, scaleChars: number): HTMLElement {
  const { block } = view;
  return h(
    'li',
    { class: `block ${authorityClass(block.authority)}`, data: { block: String(view.index), kind: block.kind } },
    h(
      'div',
      { class: 'block-head' },
      h('span', { class: 'block-kind' }, block.kind),
      h('span', { class: `chip ${authorityClass(block.authority)}` }, block.authority),
      h('span', { class: 'cache-class' }, block.cacheClass),
      h('code', { class: 'source', title: block.source }, block.source),
      h('span', { class: 'num' }, `${formatNumber(block.chars)} chars`),
      h('span', { class: 'num' }, `≈${formatNumber(block.approxTokens)} tokens`),
      h('span', { class: 'num share' }, `${percentOf(view.chars, scaleChars).toFixed(1)}%`),
      sha(block.sha256),
    ),
    view.text !== null || view.delivered !== null
      ? h(
          'details',
          {},
          h('summary', {}, view.place === 'input' ? 'text (decoded from its input line)' : 'text'),
          h('pre', { class: 'block-text' }, view.text ?? view.delivered),
        )
      : h('p', { class: 'muted small' }, 'Text not recorded for this block.'),
  );
}

function cacheSection(layout: EventLayout): HTMLElement {
  return h(
    'section',
    { class: 'cache' },
    h('h3', {}, 'Cache plan'),
    definitions([
      ['route key', layout.routeKey ? h('code', { class: 'route-key' }, layout.routeKey) : null],
      ['engine', layout.routeKey ? (layout.engine !== null ? h('code', { class: 'engine' }, layout.engine) : h('span', { class: 'muted' }, 'none named')) : null],
      ['provider', layout.provider !== null ? h('span', { class: 'cache-provider' }, layout.caching === 'none' ? `${layout.provider}: caches nothing` : layout.provider) : null],
      ['provider minimum', layout.minimumTokens !== null ? `${formatNumber(layout.minimumTokens)} tokens` : null],
      ['tokens counted by', layout.tokenizer !== null ? h('code', { class: 'tokenizer' }, layout.tokenizer) : null],
      ['tool definitions', layout.toolTokens !== null ? `${formatNumber(layout.toolTokens)} tokens, in every boundary` : null],
    ]),
    layout.boundaries.length
      ? h(
          'table',
          { class: 'boundaries' },
          h('thead', {}, h('tr', {}, ['class', 'after block', 'prefix', 'tokens', 'cacheable', 'prefix sha256'].map((label) => h('th', {}, label)))),
          h(
            'tbody',
            {},
            layout.boundaries.map((boundary) =>
              h(
                'tr',
                {},
                h('td', {}, boundary.class),
                h('td', {}, boundary.blockIndex !== null ? `#${boundary.blockIndex} ${boundary.afterBlock}` : boundary.afterBlock),
                h('td', { class: 'num' }, `${formatNumber(boundary.prefixChars)} chars`),
                h(
                  'td',
                  { class: 'num', ...(boundary.tokens !== null && boundary.approxTokens !== null ? { title: `estimate ≈${formatNumber(boundary.approxTokens)}` } : {}) },
                  tokenCount(boundary, layout.tokenizer) ?? '—',
                ),
                h(
                  'td',
                  {},
                  boundary.belowMinimum === null ? '—' : boundary.belowMinimum ? h('span', { class: 'flag' }, 'below minimum') : h('span', { class: 'ok' }, 'yes'),
                ),
                h('td', {}, sha(boundary.prefixSha256, 'prefix sha256')),
              ),
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'No cache boundaries recorded.'),
  );
}

/** A worker compile's recall decision and receipts: what shaped the prompt, as the trace recorded it. */
function governanceSection(recall: Recall | undefined, receipts: Receipts | undefined): HTMLElement {
  const preferences = receipts ? Object.entries(receipts.preferences) : [];
  return h(
    'section',
    { class: 'governance' },
    h('h3', {}, 'Recall and receipts'),
    definitions([
      [
        'recall',
        recall
          ? h(
              'span',
              { class: 'recall', data: { suppressed: String(recall.suppressed) } },
              recall.suppressed ? 'suppressed: no memory notes read (a clean-room worker on a clean run)' : `recalled (policy ${recall.policy})`,
              recall.interactionContext.length > 0 ? ` · interaction context: ${recall.interactionContext.join(', ')}` : null,
            )
          : null,
      ],
      [
        'role',
        receipts
          ? receipts.role
            ? h(
                'span',
                { class: 'role' },
                h('code', {}, receipts.role.id),
                receipts.role.selectedBy === 'request' ? ' (asked for) ' : ' (the default) ',
                h('code', { class: 'source' }, receipts.role.source),
                ' ',
                sha(receipts.role.sha256),
              )
            : 'none'
          : null,
      ],
      [
        'blueprint',
        receipts
          ? h(
              'span',
              { class: 'blueprint' },
              h('code', {}, receipts.blueprint.revision),
              receipts.blueprint.source ? [' ', h('code', { class: 'source' }, receipts.blueprint.source)] : null,
              receipts.blueprint.sha256 ? [' ', sha(receipts.blueprint.sha256)] : null,
            )
          : null,
      ],
      [
        'experiences',
        receipts
          ? receipts.experiences.length > 0
            ? h('ul', { class: 'experiences' }, receipts.experiences.map((item) => h('li', {}, h('code', {}, item.sourceRef), ' ', sha(item.sha256))))
            : 'none'
          : null,
      ],
      ['preferences', receipts ? (preferences.length > 0 ? preferences.map(([key, value]) => `${key} ${value}`).join(' · ') : 'none') : null],
    ]),
  );
}

function digestsSection(event: TraceEvent): Child {
  if (!event.promptSha256 && !event.inputSha256) return null;
  return h(
    'section',
    { class: 'digests' },
    h('h3', {}, 'Digests'),
    definitions([
      ['promptSha256', event.promptSha256 ? h('code', { class: 'sha full' }, event.promptSha256) : null],
      ['inputSha256', event.inputSha256 ? h('code', { class: 'sha full' }, event.inputSha256) : 'none (no input prompt)'],
    ]),
  );
}

function redactionsAndWarnings(event: TraceEvent, layout: EventLayout): Child {
  const warnings = event.warnings ?? [];
  if (!event.redactions && warnings.length === 0) return null;
  const omittedNote = Object.values(layout.omitted).some((count) => count > 0);
  return h(
    'section',
    { class: 'notes' },
    event.redactions
      ? h(
          'div',
          { class: 'redactions' },
          h('h3', {}, 'Redactions'),
          h(
            'p',
            {},
            h('span', { class: 'count', data: { kind: 'email' } }, `${event.redactions.email} email`),
            ' · ',
            h('span', { class: 'count', data: { kind: 'phone' } }, `${event.redactions.phone} phone`),
            h('span', { class: 'muted' }, ' — counts only; the values never leave the service.'),
          ),
        )
      : null,
    h(
      'div',
      { class: 'warnings' },
      h('h3', {}, `Warnings (${warnings.length})`),
      warnings.length ? h('ul', {}, warnings.map((warning) => h('li', {}, warning))) : h('p', { class: 'muted' }, omittedNote ? 'None beyond the omissions above.' : 'None.'),
    ),
  );
}

function sourceState(source: TraceSource): HTMLElement {
  if (source.changed === undefined) return h('span', { class: 'muted' }, 'not checked');
  if (!source.changed) return h('span', { class: 'ok' }, 'unchanged');
  if (source.currentSha256 === null) return h('span', { class: 'flag changed' }, 'gone or unreadable');
  return h('span', { class: 'flag changed', title: `now ${source.currentSha256 ?? ''}` }, 'changed since');
}

function files(count: number): string {
  return `${formatNumber(count)} file${count === 1 ? '' : 's'}`;
}

function absentState(entry: TraceAbsent): HTMLElement {
  if (entry.appeared === undefined) return h('span', { class: 'muted' }, 'not checked');
  if (!entry.appeared) return h('span', { class: 'ok' }, 'still missing');
  return h('span', { class: 'flag changed' }, 'appeared since');
}

function listingState(listing: TraceListing): HTMLElement {
  if (listing.changed === undefined) return h('span', { class: 'muted' }, 'not checked');
  if (!listing.changed) return h('span', { class: 'ok' }, 'unchanged');
  if (listing.currentCount === null || listing.currentCount === undefined) return h('span', { class: 'flag changed' }, 'cannot be listed now');
  const names = [...(listing.added ?? []).map((name) => `+${name}`), ...(listing.removed ?? []).map((name) => `−${name}`)];
  const detail = names.length > 0 ? `: ${names.join(', ')}` : `: ${files(listing.currentCount)} now`;
  return h('span', { class: 'flag changed', title: `now ${listing.currentSha256 ?? ''}` }, `files changed${detail}`);
}

function sourcesSection(sources: TraceSource[], absent: TraceAbsent[], listings: TraceListing[]): HTMLElement {
  const rows = [
    ...sources.map((source) =>
      h(
        'tr',
        { data: { path: source.path } },
        h('td', {}, h('code', {}, source.path), source.truncated ? h('span', { class: 'muted' }, ' (read in part)') : null),
        h('td', { class: 'num' }, `${formatNumber(source.size)} B`),
        h('td', {}, sha(source.sha256)),
        h('td', {}, sourceState(source)),
      ),
    ),
    ...listings.map((listing) =>
      h(
        'tr',
        { data: { path: `${listing.path}/` } },
        h('td', {}, h('code', {}, `${listing.path}/`), h('span', { class: 'muted' }, ' (listed)')),
        h('td', { class: 'num' }, files(listing.count)),
        h('td', {}, sha(listing.sha256)),
        h('td', {}, listingState(listing)),
      ),
    ),
    ...absent.map((entry) =>
      h(
        'tr',
        { data: { path: entry.path } },
        h('td', {}, h('code', {}, entry.path)),
        h('td', { class: 'num' }, '—'),
        h('td', { class: 'muted' }, 'missing'),
        h('td', {}, absentState(entry)),
      ),
    ),
  ];
  return h(
    'section',
    { class: 'sources' },
    h(
      'h3',
      {},
      `Brain files read (${sources.length})`,
      listings.length ? ` · directories listed (${listings.length})` : '',
      absent.length ? ` · looked for, missing (${absent.length})` : '',
    ),
    rows.length
      ? h('table', {}, h('thead', {}, h('tr', {}, ['path', 'size', 'sha256 then', 'now'].map((label) => h('th', {}, label)))), h('tbody', {}, rows))
      : h('p', { class: 'muted' }, 'No brain files were read.'),
  );
}

function shareCell(share: number): HTMLElement {
  const bar = h('span', { class: 'share-bar' });
  bar.style.width = `${percentOf(share * 100, 100).toFixed(1)}%`;
  return h('td', { class: 'num share' }, bar, `${(share * 100).toFixed(1)}%`);
}

function missingCell(): HTMLElement {
  const cell = h('td', { class: 'muted' }, 'looked for, missing');
  cell.colSpan = 5;
  return cell;
}

/** The HUD: every file the compile looked for, what it read of each, and the share of the budget it became. */
function hudSection(hud: Hud | undefined, rejected: string[] | undefined): HTMLElement {
  if (!hud) {
    return h(
      'section',
      { class: 'hud', role: 'alert' },
      h('h3', {}, 'HUD'),
      h('p', { class: 'flag' }, 'The recorded HUD was rejected when the trace was read back:'),
      h('ul', {}, (rejected ?? []).map((problem) => h('li', {}, problem))),
    );
  }
  const found = hud.files.filter((file) => file.exists).length;
  const rows = hud.files.map((file) =>
    h(
      'tr',
      { data: { path: file.path } },
      h('td', {}, h('code', {}, file.path)),
      file.exists
        ? [
            h('td', { class: 'num' }, file.bytes === file.size ? `${formatNumber(file.size)} B` : `${formatNumber(file.bytes)} of ${formatNumber(file.size)} B`),
            h('td', { class: 'num' }, `≈${formatNumber(file.tokens)}`),
            h('td', { class: 'num lines' }, lineRangeText(file.lines)),
            h('td', {}, file.blocks.length ? file.blocks.join(', ') : h('span', { class: 'muted' }, '—')),
            shareCell(file.share),
          ]
        : missingCell(),
    ),
  );
  return h(
    'section',
    { class: 'hud' },
    h('h3', {}, `HUD: ${hud.files.length} file${hud.files.length === 1 ? '' : 's'} looked for, ${found} found`),
    h('p', { class: 'muted small' }, 'snapshot ', sha(hud.snapshotSha256), ` · ${formatNumber(hud.usedChars)} of ${formatNumber(hud.limitChars)} chars used`),
    h(
      'table',
      {},
      h('thead', {}, h('tr', {}, ['path', 'read', 'tokens', 'lines', 'blocks', 'share'].map((label) => h('th', {}, label)))),
      h('tbody', {}, rows),
    ),
    hud.derived.length
      ? h(
          'p',
          { class: 'muted small derived' },
          'From no single file: ',
          hud.derived.map((row, i) => `${i ? ', ' : ''}${row.kind} (${row.source}) ${(row.share * 100).toFixed(1)}%`).join(''),
        )
      : null,
  );
}

async function copyText(text: string, button: HTMLButtonElement): Promise<void> {
  const label = button.textContent;
  let copied = false;
  try {
    await navigator.clipboard.writeText(text);
    copied = true;
  } catch {
    // No async clipboard on an insecure origin: copy through a detached text area instead.
    const area = h('textarea', { class: 'offscreen' });
    area.value = text;
    area.readOnly = true;
    document.body.append(area);
    area.select();
    copied = document.execCommand('copy');
    area.remove();
  }
  button.textContent = copied ? 'Copied' : 'Copy failed: select the text instead';
  setTimeout(() => {
    button.textContent = label;
  }, 1500);
}

/** The voice and tools a persona answer gave, and the realtime session they made with the delivered instructions. */
function realtimeSection(event: TraceEvent, realtime: TraceRealtime): HTMLElement {
  const session = sessionJson(event);
  const copy: HTMLButtonElement = h('button', { type: 'button', class: 'secondary small copy-session', onClick: () => void copyText(session ?? '', copy) }, 'Copy session');
  const tools = realtime.tools;
  return h(
    'section',
    { class: 'realtime' },
    event.request['provider'] === 'gemini'
      ? [
          h('h3', {}, 'Gemini Live setup'),
          h(
            'p',
            { class: 'muted small' },
            'What the voice server sent at connect: ',
            h('code', {}, '{generationConfig: {…voiceName}, systemInstruction: {parts: [{text}]}, tools: [{functionDeclarations}]}'),
            ', the text being the delivered prompt below and the declarations these tools translated to Gemini’s schema.',
          ),
        ]
      : [
          h('h3', {}, 'Realtime session ', session !== null ? copy : null),
          h(
            'p',
            { class: 'muted small' },
            'What the voice server sent at connect: ',
            h('code', {}, '{type: "realtime", instructions, audio: {output: {voice}}, tools}'),
            ', the instructions being the delivered prompt below.',
          ),
        ],
    definitions([
      ['voice', h('code', { class: 'session-voice' }, realtime.voice)],
      ['tools', realtime.toolNames.length > 0 ? realtime.toolNames.join(', ') : 'none'],
      ['tools sha256', h('code', { class: 'sha full tools-sha', title: 'sha256 of the delivered tools as JSON' }, realtime.toolsSha256)],
    ]),
    tools === null
      ? h('p', { class: 'verified bad', role: 'alert' }, `✗ The tool definitions could not be read back; delivered: ${realtime.toolNames.join(', ') || 'none'}.`)
      : tools.length === 0
        ? h('p', { class: 'muted' }, 'No tools.')
        : h(
            'table',
            { class: 'tools' },
            h('thead', {}, h('tr', {}, ['name', 'description', 'parameters'].map((label) => h('th', {}, label)))),
            h(
              'tbody',
              {},
              tools.map((tool) =>
                h(
                  'tr',
                  { data: { tool: tool.name } },
                  h('td', {}, h('code', {}, tool.name)),
                  h('td', {}, tool.description),
                  h('td', {}, h('details', {}, h('summary', {}, 'JSON Schema'), h('pre', { class: 'tool-parameters' }, JSON.stringify(tool.parameters, null, 2)))),
                ),
              ),
            ),
          ),
  );
}

function promptSection(event: TraceEvent): HTMLElement {
  const system = event.systemPrompt ?? '';
  const input = event.inputPrompt;
  const instructions = input === null ? system : `${system}\n\n${input}`;
  const button = (label: string, text: string, name: string) => {
    const element: HTMLButtonElement = h('button', { type: 'button', class: `secondary small ${name}`, onClick: () => void copyText(text, element) }, label);
    return element;
  };
  return h(
    'section',
    { class: 'delivered' },
    h(
      'h3',
      {},
      'Delivered prompt ',
      button('Copy instructions', instructions, 'copy-instructions'),
      button('Copy system prompt', system, 'copy-system'),
      input !== null ? button('Copy input prompt', input, 'copy-input') : null,
    ),
    h('p', { class: 'muted small' }, 'Exactly as delivered. systemPrompt:'),
    h('pre', { class: 'prompt system-prompt' }, system),
    input !== null
      ? [
          h('p', { class: 'muted small' }, 'inputPrompt (one JSON object per block, for the lowest-privilege channel):'),
          h('pre', { class: 'prompt input-prompt' }, input),
        ]
      : h('p', { class: 'muted small' }, 'No input prompt.'),
  );
}
