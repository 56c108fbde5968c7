/**
 * The answer first: what a run's prompt said that changes per call — the live context, the
 * topic, memory, the task, the clock — as plain text, one readable line per line, with a find
 * box over the whole prompt; the fixed blocks (identity, rules, tools) folded below it. For a
 * mid-call refresh, first what was sent: the delta text, rebuilt from the trace and held to
 * its digest, and its own size.
 */
import { h, headed, type Child } from './dom.js';
import {
  authorityLabel,
  cacheClassLabel,
  eventSize,
  findMatches,
  formatNumber,
  readableRefreshText,
  type BlockView,
  type EventLayout,
  type TraceEvent,
} from './model.js';
import { authorityClass } from './views.js';

/** A block's text changes per call when it is not in the system prompt's stable part: the input blocks and the clock. */
export function changesPerCall(view: BlockView): boolean {
  return view.block.authority !== 'trusted-directive' || view.block.cacheClass === 'volatile';
}

/** How a refresh reached the model, in words. */
const DELIVERY_WORDS: Record<string, string> = {
  'conversation-item': 'as a system message in the conversation',
  'client-content': 'as client content between turns',
  reconnect: 'with a reconnect carrying the whole updated setup',
};

/** What a delivered refresh sent: its size, how, and its text when the trace rebuilds it to its digest. */
export function sentSection(event: TraceEvent, copy: (label: string, text: string, name: string) => HTMLButtonElement, level: 'h2' | 'h3' = 'h2'): HTMLElement | null {
  const refresh = event.refresh;
  if (!refresh || event.outcome !== 'delivered') return null;
  const rebuilt = event.refreshText;
  const how = refresh.delivery ? DELIVERY_WORDS[refresh.delivery] ?? refresh.delivery : `in ${refresh.provider}’s form`;
  return h(
    'section',
    { class: 'sent' },
    headed(level, 'What was sent mid-call', rebuilt?.text ? copy('Copy as sent', rebuilt.text, 'copy-sent') : null),
    h('p', {}, h('strong', { class: 'sent-size' }, eventSize(event)), ` ${how}, to ${refresh.provider}.`),
    refresh.delivery === 'reconnect' ? h('p', {}, `What changed in it, as the refresh says it (${formatNumber(refresh.chars)} chars):`) : null,
    rebuilt?.text
      ? [
          h('p', { class: 'verified ok' }, '✓ Rebuilt from the trace (the connect’s input and this compile’s) and equal to the digest recorded when it was sent.'),
          h('pre', { class: 'prompt sent-text' }, readableRefreshText(rebuilt.text)),
          h('p', { class: 'muted small' }, 'Each changed block is one line of JSON as sent; shown decoded. “Copy as sent” copies the exact bytes.'),
        ]
      : h('p', { class: 'verified bad', role: 'alert' }, `✗ The text sent cannot be shown: ${rebuilt?.reason ?? 'this service did not rebuild it'}.`),
    refresh.delivery === 'reconnect'
      ? h('p', { class: 'muted small' }, 'A reconnect sends the whole setup again: the prompt below is what the model was given.')
      : h('p', { class: 'muted small' }, 'The prompt below is the fresh compile this refresh compared with the connect’s; it was not sent again.'),
  );
}

interface Searchable {
  pre: HTMLElement;
  text: string;
  fold: HTMLDetailsElement | null;
}

/** Draws `text` into `pre` with each match of `query` marked; returns the marks. */
function mark(target: Searchable, query: string): HTMLElement[] {
  const matches = findMatches(target.text, query);
  const pieces: Child[] = [];
  const marks: HTMLElement[] = [];
  let at = 0;
  for (const [start, end] of matches) {
    if (start > at) pieces.push(target.text.slice(at, start));
    const found = h('mark', {}, target.text.slice(start, end));
    marks.push(found);
    pieces.push(found);
    at = end;
  }
  pieces.push(target.text.slice(at));
  target.pre.replaceChildren();
  for (const piece of pieces) target.pre.append(typeof piece === 'string' ? h('span', {}, piece) : (piece as Node));
  return marks;
}

/**
 * The find box: every block's text searched as it reads (input lines decoded), the matches
 * marked and counted, the folded blocks holding one opened. Enter goes to the next match,
 * Shift+Enter to the one before.
 */
function findBox(targets: Searchable[]): HTMLElement {
  const input = h('input', { type: 'search', name: 'find', placeholder: 'a word or line, e.g. a task', autocomplete: 'off', ariaLabel: 'Find in the whole prompt' });
  const status = h('span', { class: 'find-status muted small', role: 'status' }, `Searches all ${targets.length} blocks.`);
  let marks: HTMLElement[] = [];
  let current = -1;
  const go = (step: number) => {
    if (marks.length === 0) return;
    marks[current]?.classList.remove('current');
    current = (current + step + marks.length) % marks.length;
    const target = marks[current]!;
    target.classList.add('current');
    target.scrollIntoView({ block: 'center' });
    status.textContent = `${current + 1} of ${marks.length} ${marks.length === 1 ? 'match' : 'matches'}${blockCount()}`;
  };
  let blocks = 0;
  const blockCount = () => ` in ${blocks} block${blocks === 1 ? '' : 's'}`;
  const search = () => {
    const query = input.value;
    marks = [];
    current = -1;
    blocks = 0;
    for (const target of targets) {
      const found = mark(target, query);
      if (found.length > 0) blocks += 1;
      // A folded block opens while it holds a match, and folds again once the search no longer finds one there.
      if (target.fold && found.length > 0 && !target.fold.open) {
        target.fold.open = true;
        target.fold.dataset['openedByFind'] = 'true';
      } else if (target.fold && found.length === 0 && target.fold.dataset['openedByFind'] === 'true') {
        target.fold.open = false;
        delete target.fold.dataset['openedByFind'];
      }
      marks.push(...found);
    }
    status.textContent = query === '' ? `Searches all ${targets.length} blocks.` : marks.length === 0 ? 'Not in this prompt.' : `${marks.length} ${marks.length === 1 ? 'match' : 'matches'}${blockCount()}`;
  };
  input.addEventListener('input', search);
  input.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter') return;
    event.preventDefault();
    go(event.shiftKey ? -1 : 1);
  });
  const previous = h('button', { type: 'button', class: 'secondary small find-previous', onClick: () => go(-1) }, 'Previous');
  const next = h('button', { type: 'button', class: 'secondary small find-next', onClick: () => go(1) }, 'Next');
  return h('div', { class: 'find-box', role: 'search' }, h('label', {}, 'Find in the prompt ', input), previous, next, status);
}

function blockTag(view: BlockView): HTMLElement {
  return h(
    'span',
    { class: 'muted small' },
    h('span', { class: `chip ${authorityClass(view.block.authority)}`, title: view.block.authority }, authorityLabel(view.block.authority)),
    ` ${cacheClassLabel(view.block.cacheClass)} · ${formatNumber(view.chars)} chars · `,
    h('code', { class: 'source' }, view.block.source),
  );
}

/**
 * The event's prompt for the person reading it: what changes per call first, each block's
 * text as it reads, then the fixed blocks folded — all searched by the find box.
 */
export function answerSection(event: TraceEvent, layout: EventLayout): HTMLElement | null {
  const shown = layout.blocks.filter((view) => view.text !== null || view.delivered !== null);
  if (shown.length === 0) return null;
  const targets: Searchable[] = [];
  const text = (view: BlockView, fold: HTMLDetailsElement | null) => {
    const pre = h('pre', { class: 'block-text plain' }, view.text ?? view.delivered);
    targets.push({ pre, text: view.text ?? view.delivered ?? '', fold });
    return pre;
  };
  const perCall = shown.filter(changesPerCall);
  const fixed = shown.filter((view) => !changesPerCall(view));
  const changing = perCall.map((view) =>
    h('div', { class: 'per-call-block', data: { kind: view.block.kind } }, h('h3', {}, view.block.kind, ' ', blockTag(view)), text(view, null)),
  );
  const folded = fixed.map((view) => {
    const fold = h('details', { class: 'fixed-block', data: { kind: view.block.kind } });
    fold.append(h('summary', {}, h('strong', {}, view.block.kind), ' ', blockTag(view)), text(view, fold));
    return fold;
  });
  const refresh = event.refresh !== undefined;
  return h(
    'section',
    { class: 'per-call' },
    h('h2', {}, refresh ? 'What changes per call, as compiled for this refresh' : 'What changes per call'),
    h(
      'p',
      { class: 'muted small' },
      'The live context, topic, memory, task and clock of this prompt, as the model reads them (input lines decoded). The fixed blocks follow, folded.',
    ),
    findBox(targets),
    changing.length > 0 ? changing : h('p', { class: 'muted' }, 'Nothing in this prompt changes per call.'),
    folded.length > 0 ? [h('h3', { class: 'fixed-heading' }, `Fixed blocks (${folded.length}): the same on every call`), folded] : null,
  );
}
