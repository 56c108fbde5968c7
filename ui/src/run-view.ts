/**
 * A run's page (`#/runs/<runId>`), in the order an operator asks: a summary card first —
 * what failed or warned, in colour; the minute compiled for, subject, topic, role, engine,
 * status and size against the budget; and how it differs from the previous run of the
 * subject, in one line — then a timeline of its events, then each event (the latest open,
 * its prompt before its blocks), and what the hash chain says, folded.
 */
import { comparableEvent, compareRuns, comparisonLine, latestComparable, type ComparedEvent } from './compare.js';
import { h, headed, replace, type Child } from './dom.js';
import { budgetWords, copyButton, failureBox, renderEvent } from './event-view.js';
import { answerSection, sentSection } from './prompt-view.js';
import { ApiError } from './api.js';
import {
  callPartOf,
  CALL_PARTS,
  compareHash,
  eventMinute,
  eventSize,
  formatNumber,
  formatTime,
  layoutEvent,
  prefixHeld,
  runHash,
  runListPath,
  runTracePath,
  type ChainStatus,
  type RunList,
  type RunSummary,
  type RunTrace,
  type TraceEvent,
} from './model.js';
import { definitions, outcomeClass, PAGE_SIZE, problemBox, type PageContext } from './views.js';

export async function renderRun(context: PageContext, runId: string): Promise<void> {
  const { main } = context;
  const body = h('div', {}, h('p', { class: 'muted' }, 'Loading the trace…'));
  const previousLink = h('span', { class: 'previous-run-nav' });
  replace(main, h('p', { class: 'run-nav' }, h('a', { href: '#/runs' }, '← Runs'), previousLink), h('h1', {}, 'Run ', h('code', {}, runId)), body);

  let trace: RunTrace;
  try {
    trace = await context.api.get<RunTrace>(runTracePath(runId));
  } catch (error) {
    if (context.current()) replace(body, problemBox(error));
    return;
  }
  if (!context.current()) return;
  const count = trace.events.length;
  const latest = trace.events[count - 1]!;

  // The answer first: what the newest prompt says that changes per call (and, for a refresh, what was sent), before anything else.
  const sentRefresh = [...trace.events].reverse().find((event) => event.refresh && event.outcome === 'delivered') ?? null;
  const panels = trace.events.map((event, i) => renderEvent(event, `Event ${i + 1}`, i === count - 1, event === sentRefresh));
  const events = h('div', { class: 'events' }, panels);
  const connect = connectOf(trace);
  const versus = h('p', { class: 'vs-previous muted' }, connect !== null && connect !== trace.runId ? partLine(connect) : `Looking for the previous call of ${latest.subject.id}…`);
  const call = connect === null ? null : h('section', { class: 'call-timeline' }, h('h2', {}, 'The call'), h('p', { class: 'muted small' }, 'Looking for its refreshes…'));
  const answered = [...trace.events].reverse().find((event) => event.blocks?.length && event.systemPrompt !== null) ?? null;

  replace(
    body,
    runCard(trace, latest, versus),
    sentRefresh ? sentSection(sentRefresh, copyButton) : null,
    answered ? answerSection(answered, layoutEvent(answered)) : null,
    glossary(),
    call,
    count > 1 || trace.nextCursor !== null ? timeline(trace, panels) : null,
    events,
    trace.nextCursor === null ? null : laterEvents(context, runId, trace.nextCursor, count, events),
    chainSection(trace.chain, trace.nextCursor !== null),
    trace.events.some((event) => event.blocks?.length) ? comparePicker(context, trace) : null,
  );
  await Promise.all([
    call === null || connect === null ? null : callTimeline(context, trace, connect, call),
    connect !== null && connect !== trace.runId ? connectNav(previousLink, connect) : previousRun(context, trace, latest, versus, previousLink),
  ]);
}

/**
 * The connect of the call a run belongs to: the run itself when it is a persona connect, the
 * run its events name as parent when it is a part of a call (a mid-call refresh, a
 * reconnect); null for any other run (a worker compile, a topic).
 */
function connectOf(trace: RunTrace): string | null {
  const parent = trace.events.find((event) => event.parentRunId !== undefined)?.parentRunId;
  if (parent !== undefined) return parent;
  const latest = trace.events.at(-1)!;
  const part = callPartOf({ runId: trace.runId, route: latest.route });
  if (part !== null) return part.connect;
  return trace.events.some((event) => event.subject.kind === 'persona' && event.route === `GET /context/${event.subject.id}`) ? trace.runId : null;
}

function partLine(connect: string): Child[] {
  return [
    h('strong', {}, 'Part of the call connected in run '),
    h('a', { class: 'connect-run', href: runHash(connect) }, connect),
    '. What changed since the previous call is on that run’s page.',
  ];
}

function connectNav(nav: HTMLElement, connect: string): void {
  replace(nav, ' · ', h('a', { class: 'connect-nav', href: runHash(connect) }, '← The call’s connect'));
}

/** One event of a call, in the order it was traced, and the run it is in. */
interface CallStep {
  runId: string;
  part: 'connect' | 'refresh' | 'reconnect';
  index: number;
  event: TraceEvent;
}

/** The first page of a run's events, when the run exists (looked up in the runs list first: a missing run is no 404 in the console). */
async function callRun(context: PageContext, runId: string, known: RunTrace): Promise<RunTrace | null> {
  if (runId === known.runId) return known;
  const listed = await context.api.get<RunList>(runListPath({ runId }, 1));
  if (listed.runs.length === 0) return null;
  try {
    return await context.api.get<RunTrace>(runTracePath(runId, { verifySources: false, limit: 100 }));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return null;
    throw error;
  }
}

/**
 * The call as one conversation: its connect, then each refresh (with the size and the blocks
 * of what it sent) and each reconnect, in the order traced, each linked to its run. Only runs
 * that exist are linked: a call without refreshes says so.
 */
async function callTimeline(context: PageContext, trace: RunTrace, connect: string, section: HTMLElement): Promise<void> {
  const ids: Array<[CallStep['part'], string]> = [['connect', connect], ...CALL_PARTS.map((part): [CallStep['part'], string] => [part, `${connect}:${part}`])];
  let runs: Array<RunTrace | null>;
  try {
    runs = await Promise.all(ids.map(([, runId]) => callRun(context, runId, trace)));
  } catch (error) {
    if (context.current()) replace(section, h('h2', {}, 'The call'), problemBox(error));
    return;
  }
  if (!context.current()) return;
  const steps: CallStep[] = [];
  runs.forEach((run, i) => run?.events.forEach((event, index) => steps.push({ runId: run.runId, part: ids[i]![0], index, event })));
  steps.sort((a, b) => a.event.at.localeCompare(b.event.at));
  const parts = steps.filter((step) => step.part !== 'connect').length;
  const items = steps.map((step) =>
    h(
      'li',
      { class: step.runId === trace.runId ? 'this-run' : '', data: { part: step.part, runId: step.runId, outcome: step.event.outcome } },
      h('span', { class: 'part-kind' }, step.part),
      h('span', { class: 'muted small' }, `compiled for ${eventMinute(step.event)} · `),
      h('span', { class: `status ${outcomeClass(step.event.outcome)}` }, String(step.event.status)),
      ` ${stepNote(step)} · `,
      step.runId === trace.runId ? h('span', { class: 'muted small' }, `this run, event ${step.index + 1}`) : h('a', { href: runHash(step.runId) }, `run ${step.runId}`),
    ),
  );
  const missing = runs[0] === null ? h('p', { class: 'muted small' }, `The connect, run ${connect}, is not in the trace (older than the retention, or another caller’s).`) : null;
  const none = parts === 0 ? h('p', { class: 'muted small call-alone' }, 'The call made no mid-call refresh and did not reconnect.') : null;
  replace(section, h('h2', {}, 'The call'), missing, h('ol', {}, items), none);
}

/** What one step of a call did: the prompt's size at the connect, the change sent by a refresh. */
function stepNote({ part, event }: CallStep): string {
  if (event.error) return `failed: ${event.error.code}`;
  if (event.outcome === 'not-modified') return part === 'refresh' ? 'nothing changed since the connect' : 'not modified (nothing sent again)';
  if (part === 'refresh' && event.refresh) {
    const changes = event.refresh.changes.map((change) => `${change.block} +${change.added} −${change.removed} lines`).join(', ');
    return `sent ${formatNumber(event.refresh.chars)} chars${changes ? `: ${changes}` : ''}`;
  }
  return `${formatNumber(event.chars)} chars delivered`;
}

/** The run at a glance: the latest event's failure and warnings first, in colour; its facts; how it differs from the run before. */
function runCard(trace: RunTrace, latest: TraceEvent, versus: HTMLElement): HTMLElement {
  const warnings = latest.warnings ?? [];
  const role = latest.receipts?.role
    ? `${latest.receipts.role.id} (${latest.receipts.role.selectedBy === 'request' ? 'asked for' : 'the default'})`
    : typeof latest.request['role'] === 'string'
      ? latest.request['role']
      : null;
  const engine = typeof latest.request['engine'] === 'string' ? latest.request['engine'] : typeof latest.cache?.['engine'] === 'string' ? (latest.cache['engine'] as string) : null;
  const topic = typeof latest.request['topicId'] === 'string' ? latest.request['topicId'] : null;
  const budget = latest.budget ?? {};
  const used = typeof budget['usedChars'] === 'number' ? budget['usedChars'] : null;
  const limit = typeof budget['limitChars'] === 'number' ? budget['limitChars'] : null;
  // The characters delivered, as the runs list says; against the budget, what its limit counts (the instructions, with the
  // blank line between the prompts) in the Budget section's own words, so the two figures are never read as one that disagrees.
  // One size figure: what reached the model (a refresh's own text, not the prompt it compared), and the budget as a share of its limit.
  const size =
    latest.outcome === 'failed'
      ? 'nothing delivered'
      : [
          h('span', { class: 'card-delivered' }, eventSize(latest)),
          used !== null && limit !== null && !latest.refresh ? [' · ', h('span', { class: 'card-budget' }, budgetWords(used, limit))] : null,
        ];
  const count = trace.events.length;
  return h(
    'section',
    { class: 'run-card' },
    latest.error ? failureBox(latest.error) : null,
    trace.chain.status === 'broken' ? h('p', { class: 'verified bad', role: 'alert' }, '✗ The hash chain is broken: see “Hash chain” below.') : null,
    warnings.length > 0
      ? h(
          'div',
          { class: 'card-warnings', role: 'alert' },
          h('strong', {}, `⚠ ${warnings.length} warning${warnings.length === 1 ? '' : 's'}`),
          h('ul', {}, warnings.map((warning) => h('li', {}, warning))),
        )
      : null,
    definitions([
      ['compiled for', h('span', { class: 'card-minute', title: `traced ${latest.at}` }, eventMinute(latest))],
      [latest.subject.kind, h('span', { class: 'card-subject' }, latest.subject.id)],
      ['topic', topic],
      ['role', role],
      ['engine', engine ?? h('span', { class: 'muted' }, 'none named')],
      [
        'status',
        h(
          'span',
          { class: 'card-status' },
          h('span', { class: `status ${outcomeClass(latest.outcome)}` }, String(latest.status)),
          ` ${latest.outcome}`,
          count > 1 || trace.nextCursor !== null ? h('span', { class: 'muted small' }, ` · event ${count} of ${trace.nextCursor === null ? count : `${count}+`}`) : null,
        ),
      ],
      ['size', h('span', { class: 'card-size' }, size)],
      ['request id', latest.requestId ? h('code', { class: 'request-id' }, latest.requestId) : null],
    ]),
    versus,
  );
}

/** What an event did to the cache, against the delivered event before it on the page. */
function cacheNote(event: TraceEvent, previous: TraceEvent | null): string {
  if (event.error) return `failed: ${event.error.code}`;
  const held = prefixHeld(previous, event);
  if (held === null) return previous === null ? 'first delivery shown: nothing cached before it' : 'no cache plan to compare';
  const total = held.held.length + held.moved.length;
  const what = event.outcome === 'not-modified' ? 'not modified (nothing sent again); ' : '';
  if (held.moved.length === 0) return `${what}cached prefix held (all ${total} boundaries)`;
  if (held.held.length === 0) return `${what}cached prefix moved: every boundary (${held.moved.join(', ')})`;
  return `${what}cached prefix held through ${held.held[held.held.length - 1]}; moved: ${held.moved.join(', ')}`;
}

/** The run's events in a few lines each: when it was traced, the minute compiled for, its status, and whether its cached prefix held. */
function timeline(trace: RunTrace, panels: HTMLElement[]): HTMLElement {
  let previous: TraceEvent | null = null;
  const items = trace.events.map((event, i) => {
    const note = cacheNote(event, previous);
    if (event.blocks?.length) previous = event;
    const jump = h(
      'button',
      {
        type: 'button',
        class: 'link timeline-jump',
        onClick: () => {
          const details = panels[i]!.querySelector('details');
          if (details) details.open = true;
          panels[i]!.scrollIntoView({ block: 'start' });
        },
      },
      `Event ${i + 1}`,
    );
    return h(
      'li',
      { data: { event: String(i + 1), outcome: event.outcome } },
      jump,
      h('span', { class: 'muted small' }, ` traced ${formatTime(event.at)} · compiled for ${eventMinute(event)} · `),
      h('span', { class: `status ${outcomeClass(event.outcome)}` }, String(event.status)),
      h('span', { class: 'timeline-cache' }, ` ${note}`),
    );
  });
  const shown = trace.nextCursor === null ? `${trace.events.length} events` : `the first ${trace.events.length} events`;
  return h('section', { class: 'timeline' }, h('h2', {}, `Events of this run (${shown})`), h('ol', {}, items));
}

/**
 * Finds the previous run of the run's subject (the newest other run listed before this one
 * that delivered a prompt), links it, and says in one line how this run differs from it.
 */
async function previousRun(context: PageContext, trace: RunTrace, latest: TraceEvent, versus: HTMLElement, nav: HTMLElement): Promise<void> {
  const subject = latest.subject;
  const noun = subject.kind === 'persona' ? 'call' : 'run';
  const filter = subject.kind === 'persona' ? { persona: subject.id, to: latest.at } : { worker: subject.id, to: latest.at };
  let previous: RunSummary | undefined;
  let line: Child;
  try {
    const list = await context.api.get<RunList>(runListPath(filter, PAGE_SIZE));
    // A call's refreshes and reconnects are parts of it, not calls: connects compare with connects.
    previous = list.runs.find((run) => run.runId !== trace.runId && run.outcome !== 'failed' && callPartOf(run) === null);
    if (!context.current()) return;
    if (previous === undefined) {
      replace(versus, `No previous ${noun} of ${subject.id} that delivered a prompt.`);
      return;
    }
    const page = (runId: string) => (cursor: string | null) => context.api.get<RunTrace>(runTracePath(runId, { verifySources: false, cursor, limit: 100 }));
    const mine: ComparedEvent | null = trace.nextCursor === null ? comparableEvent(trace) : await latestComparable(trace.runId, page(trace.runId));
    const theirs = await latestComparable(previous.runId, page(previous.runId));
    line = mine === null || theirs === null ? 'this run delivered no prompt to compare.' : `${comparisonLine(compareRuns(theirs, mine))}.`;
  } catch (error) {
    if (context.current()) replace(versus, problemBox(error));
    return;
  }
  if (!context.current()) return;
  const link = h('a', { class: 'previous-run', href: runHash(previous.runId) }, previous.runId);
  replace(nav, ' · ', h('a', { href: runHash(previous.runId) }, `← Previous ${noun} of ${subject.id}`));
  versus.classList.remove('muted');
  replace(
    versus,
    h('strong', {}, `vs previous ${noun} of ${subject.id}`),
    ' ',
    link,
    h('span', { class: 'muted small' }, ` (${previous.compiledFor ? `compiled for ${eventMinute({ request: { nowUsed: previous.compiledFor }, at: previous.at })}` : `traced ${formatTime(previous.at)}`})`),
    ': ',
    h('span', { class: 'vs-line' }, line),
    ' ',
    h('a', { class: 'compare-previous', href: compareHash(previous.runId, trace.runId) }, 'What changed →'),
  );
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
    events.append(h('div', { class: 'page-chain' }, chainSection(page.chain, true)), ...page.events.map((event, i) => renderEvent(event, `Event ${shown + i + 1}`, false)));
    more.replaceWith(
      page.nextCursor === null
        ? h('p', { class: 'muted' }, `${shown + page.events.length} events, in order: the last.`)
        : laterEvents(context, runId, page.nextCursor, shown + page.events.length, events),
    );
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
    const others = runs.runs.filter((run) => run.runId !== trace.runId && run.outcome !== 'failed' && callPartOf(run) === null);
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
  return h('section', { class: 'compare-with-section' }, headed('h2', 'Compare', button), list);
}

const CHAIN_TEXT: Record<ChainStatus, string> = {
  signed: '✓ Chain signed: every event holds its HMAC link under the service’s key, and nothing around them is missing.',
  linked: 'Chain linked, without a key: consistent, but anyone who can write the trace directory could have recomputed it.',
  unchained: 'No chain: these events were written before traces were chained.',
  unverifiable: 'Chain unverifiable: signed with a key this service does not hold.',
  broken: '✗ Chain broken: events were altered, inserted, removed or reordered, or a trace file is missing or cut.',
};

/** What the chains say, folded unless broken; `paged`: about the events of this page (a long run is checked a page at a time). */
function chainSection(chain: RunTrace['chain'], paged = false): HTMLElement {
  const bad = chain.status === 'broken';
  const details = h(
    'details',
    { class: `chain chain-${chain.status}`, data: { chain: chain.status }, ...(bad ? { role: 'alert' } : {}) },
    h('summary', {}, h('span', { class: 'chain-heading' }, 'Hash chain: '), h('span', { class: `verified ${chain.status === 'signed' ? 'ok' : bad ? 'bad' : 'muted'}` }, paged ? `These events: ${CHAIN_TEXT[chain.status]}` : CHAIN_TEXT[chain.status])),
    chain.problems.length > 0 ? h('ul', { class: 'chain-problems' }, chain.problems.map((problem) => h('li', {}, problem))) : null,
    chain.notes.length > 0 ? h('ul', { class: 'chain-notes muted' }, chain.notes.map((note) => h('li', {}, note))) : h('p', { class: 'muted small' }, 'Nothing more to say.'),
  );
  details.open = bad;
  return details;
}

/** The words of this page an operator may not know, each in a line; folded under the answer. */
const GLOSSARY: Array<[string, string]> = [
  ['instructions', 'blocks of the system prompt: the model follows them (identity, rules, tools, clock)'],
  ['background data', 'facts the model may use, sent in the input prompt, never as instructions (live context, topic, memory)'],
  ['task input', 'what the caller asked, sent in the input prompt (a task, a message, evidence)'],
  ['same every call · changes per call', 'how often a block’s text changes: the fixed blocks come first, so the prompt’s start can be cached'],
  ['cache checkpoint', 'a place in the prompt up to which a provider can reuse its cached work, when the text before it is the same as last time'],
  ['cacheable', 'the prompt up to a checkpoint is long enough for the provider to cache it (its minimum tokens): not that the cache was hit'],
  ['provider cache key', 'the key to send the provider (OpenAI’s prompt_cache_key) so calls that start alike reach the same cache'],
  ['files read', 'the brain files the compile looked for, what it read of each, and the blocks built from them'],
  ['compiled for', 'the minute the prompt’s clock line says'],
  ['chars delivered', 'the size of what reached the model: both prompts, or a refresh’s own text'],
];

function glossary(): HTMLElement {
  return h(
    'details',
    { class: 'glossary' },
    h('summary', {}, 'Words on this page'),
    h('dl', { class: 'facts' }, GLOSSARY.map(([term, meaning]) => [h('dt', {}, term), h('dd', {}, meaning)])),
  );
}
