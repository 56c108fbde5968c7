/**
 * What every page shares — the page context, problems, fact lists, labelled digests — and
 * the runs list. Everything shown comes from the JSON API and goes through `h()`, so brain
 * text, prompts and ids are only ever text nodes.
 */
import { ApiError, type Api } from './api.js';
import { h, replace, type Child } from './dom.js';
import { AUTHORITIES, compareHash, FILTER_KEYS, formatNumber, formatTime, groupCalls, runHash, runListPath, runsHash, shortSha, utcMinute, type RunFilter, type RunList, type RunRow, type RunSummary } from './model.js';

export interface PageContext {
  api: Api;
  main: HTMLElement;
  /** False once the person navigated elsewhere: a late answer must not overwrite the new page. */
  current(): boolean;
}

export const PAGE_SIZE = 25;
const OUTCOMES = ['delivered', 'not-modified', 'failed'] as const;

export function authorityClass(authority: string): string {
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

/**
 * A digest, labelled with what it hashes (`content`, `file`, `prefix`, …): the first 12 hex
 * digits, the whole digest and its meaning on hover. Two digests of the same thing carry the
 * same label wherever they are shown, so they can be compared by eye; a table whose column
 * names it leaves the label out (`labelled` false), not the meaning on hover.
 */
export function sha(value: string | null | undefined, what = 'content', labelled = true): HTMLElement {
  return h(
    'span',
    { class: 'digest', title: value ? `sha256 of the ${what}: ${value}` : `no sha256 of the ${what}` },
    labelled ? [h('span', { class: 'digest-label' }, `${what} sha256`), ' '] : null,
    h('code', { class: 'sha' }, shortSha(value)),
  );
}

/** `compiled for 17:30 UTC` over `traced 15:40:33`: the minute a run was made for first, when it was traced below. */
export function whenCell(compiledFor: string | null, at: string): Child[] {
  const minute = utcMinute(compiledFor);
  return [
    h('span', { class: 'compiled-for', title: compiledFor ? `compiled for ${compiledFor}` : 'recorded before the minute compiled for was listed' }, minute ?? '—'),
    h('span', { class: 'traced muted small', title: at }, `traced ${formatTime(at)}`),
  ];
}

/** A run's warnings as a flag in colour, or nothing. */
export function warningsFlag(count: number): Child {
  return count > 0 ? h('span', { class: 'warnings-flag', title: `${count} warning${count === 1 ? '' : 's'} on its latest event` }, `⚠ ${count}`) : null;
}

function describeRun(run: RunSummary): string {
  return [run.topicId && `topic ${run.topicId}`, run.role && `role ${run.role}`, run.engine && run.engine].filter(Boolean).join(' · ') || '—';
}

// ----- runs list -----

function filterForm(filter: RunFilter): HTMLFormElement {
  const field = (name: keyof RunFilter, label: string, placeholder: string, wide = false) =>
    h('label', { class: wide ? 'wide' : '' }, label, h('input', { name, value: filter[name] ?? '', placeholder, autocomplete: 'off' }));
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
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'filters',
      onSubmit: (event) => {
        event.preventDefault();
        const data = new FormData(form);
        const next: RunFilter = {};
        for (const key of FILTER_KEYS) {
          if (key === 'cursor') continue;
          const value = String(data.get(key) ?? '').trim();
          if (value) next[key] = value;
        }
        location.hash = runsHash(next);
      },
    },
    h(
      'fieldset',
      { class: 'find' },
      h('legend', {}, 'Find a run'),
      field('requestId', 'request id', 'from a log line', true),
      field('runId', 'run id', 'x-run-id', true),
      field('traceparent', 'traceparent', '00-<trace id>-… or the trace id', true),
      field('from', 'from', '2026-11-30T09:00Z'),
      field('to', 'to', '2026-11-30T10:00Z'),
    ),
    h(
      'fieldset',
      { class: 'narrow' },
      h('legend', {}, 'Latest event'),
      field('persona', 'persona', 'mars'),
      field('worker', 'worker', 'scribe'),
      field('status', 'status', '200'),
      h('label', {}, 'outcome', outcome),
    ),
    h('div', { class: 'filter-buttons' }, h('button', { type: 'submit' }, 'Find'), h('a', { class: 'button secondary', href: '#/runs' }, 'Clear')),
  );
  return form;
}

/**
 * The search form, folded in a narrow window so the runs come first: its summary says what
 * the list is filtered by. Open in a wide window, where it takes two lines.
 */
function foldedFilters(filter: RunFilter): HTMLElement {
  const active = FILTER_KEYS.filter((key) => key !== 'cursor' && filter[key]).map((key) => `${key} ${filter[key]}`);
  const fold = h(
    'details',
    { class: 'filters-fold' },
    h('summary', {}, h('span', { class: 'fold-title' }, 'Find a run'), h('span', { class: 'muted small' }, active.length > 0 ? ` · filtered by ${active.join(', ')}` : ' · by request id, run id, traceparent, time, persona, worker or status')),
    filterForm(filter),
  );
  fold.open = !window.matchMedia('(max-width: 640px)').matches;
  return fold;
}

export async function renderRunList(context: PageContext, filter: RunFilter): Promise<void> {
  const { main } = context;
  const results = h('div', { class: 'results' }, h('p', { class: 'muted' }, 'Loading runs…'));
  replace(main, h('h1', {}, 'Runs'), foldedFilters(filter), results);

  let list: RunList;
  try {
    list = await context.api.get<RunList>(runListPath(filter, PAGE_SIZE));
  } catch (error) {
    if (context.current()) replace(results, problemBox(error));
    return;
  }
  if (!context.current()) return;

  const filtered = Object.keys(filter).some((key) => key !== 'cursor');
  const whose = list.visibleTo === undefined ? null : visibleToNote(list.visibleTo);
  const partial = list.partial
    ? h('p', { class: 'partial muted small', role: 'status' }, 'Only the newest trace files were searched for this page; ', h('strong', {}, 'Older →'), ' searches on.')
    : null;
  const pager = h(
    'nav',
    { class: 'pager' },
    filter.cursor ? h('a', { class: 'button secondary', href: runsHash({ ...filter, cursor: '' }) }, '← Newest') : null,
    list.nextCursor ? h('a', { class: 'button', href: runsHash({ ...filter, cursor: list.nextCursor }), id: 'older' }, 'Older →') : null,
  );
  if (list.runs.length === 0) {
    const empty = filtered || filter.cursor ? 'No runs match.' : 'No runs yet. Every compile (GET /context/mars, POST /compile, …) is traced and shows up here.';
    const elsewhere = list.visibleTo !== undefined && filtered ? ` A run another caller opened is not listed here, even when it matches.` : '';
    replace(results, whose, h('p', { class: 'empty' }, empty, elsewhere), partial, pager);
    return;
  }
  replace(results, whose, ...runsTable(list.runs), partial, pager);
}

/** Whose runs a token sees, when not every run: said above the list, so a short list is not a mystery. */
function visibleToNote(caller: string): HTMLElement {
  return h(
    'p',
    { class: 'visible-to', role: 'note' },
    h('strong', {}, `Showing ${caller}’s runs only.`),
    ' This token reads the runs it opened; another caller’s runs are not listed, and open as unknown ones. A token named in CONTEXT_COMPILER_READ_ALL sees every run.',
  );
}

/**
 * A run's row. A part of a call (a mid-call refresh or a reconnect) sits right under its
 * connect, indented and named as such; one whose connect is on another page names it.
 */
function runRow({ run, callPart, nested }: RunRow, pickBox: (runId: string) => HTMLInputElement): HTMLElement {
  const partTag = callPart === null ? null : h('span', { class: 'call-part-tag' }, nested ? `↳ ${callPart.part}` : `${callPart.part} of call`);
  return h(
    'tr',
    { class: nested ? 'call-part nested' : callPart ? 'call-part' : '', data: { runId: run.runId, warnings: String(run.warnings), ...(callPart ? { connect: callPart.connect, callPart: callPart.part } : {}) } },
    h('td', { class: 'col-pick' }, run.outcome === 'failed' || callPart !== null ? null : pickBox(run.runId)),
    h(
      'td',
      { class: 'col-time' },
      partTag,
      whenCell(run.compiledFor, run.at),
      h('span', { class: 'subject-under' }, ` · ${run.subject.kind} ${run.subject.id}`),
      // In a narrow window the run id sits under the time, instead of a column one character wide.
      h('span', { class: 'run-id-under' }, callPart === null ? null : h('span', { class: 'call-part-tag inline' }, nested ? '↳' : `${callPart.part} of`), ' ', h('a', { href: runHash(run.runId) }, run.runId)),
    ),
    h('td', { class: 'col-subject' }, h('span', { class: 'subject-kind' }, run.subject.kind), ' ', run.subject.id),
    h('td', { class: 'col-optional col-topic' }, describeRun(run)),
    h('td', { class: 'col-optional col-caller' }, run.caller ?? '—'),
    h('td', { class: 'col-optional' }, run.surface ?? '—'),
    h(
      'td',
      { class: 'col-status' },
      h('span', { class: `status ${outcomeClass(run.outcome)}` }, String(run.status)),
      ' ',
      warningsFlag(run.warnings),
      h('span', { class: 'outcome' }, run.outcome),
    ),
    // A refresh's size is the text it sent, which its page shows; the list holds only the prompt it compared, so it says no second figure.
    h(
      'td',
      { class: 'col-optional col-chars num', ...(callPart?.part === 'refresh' ? { title: 'what a refresh sent is on its page' } : {}) },
      run.outcome === 'failed' || callPart?.part === 'refresh' ? '—' : `${formatNumber(run.chars)} chars`,
    ),
    h('td', { class: 'col-optional num' }, String(run.events)),
    h(
      'td',
      { class: 'col-run-id' },
      h('a', { class: 'run-link', href: runHash(run.runId) }, run.runId),
      callPart !== null && !nested ? h('span', { class: 'muted small call-of' }, ' of ', h('a', { href: runHash(callPart.connect) }, callPart.connect)) : null,
    ),
  );
}

/** The runs, a box to pick two of them for a comparison, and the button that opens it. */
function runsTable(runs: RunSummary[]): Child[] {
  // Two runs picked here open their comparison; a third pick replaces the oldest.
  const picked: HTMLInputElement[] = [];
  const compareButton = h('button', { type: 'button', class: 'compare-picked', title: 'Compare the two runs picked below' }, 'Compare 2 runs');
  compareButton.disabled = true;
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
  // Columns a narrow window drops (class `optional`): when, subject, status and run id always stay.
  const columns: Array<[string, string]> = [
    ['', 'pick'],
    ['compiled for · traced', 'time'],
    ['persona / worker', 'subject'],
    ['topic · role · engine', 'optional col-topic'],
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
      groupCalls(runs).map((row) => runRow(row, pickBox)),
    ),
  );
  const note = h('span', { class: 'muted small' }, 'Pick two runs of one persona or worker to compare them (a refresh is read on its call’s page).');
  return [h('div', { class: 'compare-bar' }, compareButton, note), h('div', { class: 'table-wrap' }, table)];
}
