/**
 * One traced event of a run, as the run page draws it: what was delivered first (the
 * prompt), then its blocks on a budget bar scaled to what was used, the cache plan, the
 * HUD, the brain files, and the raw request folded away. Every figure uses the one
 * definition in model.ts: a share is `chars / limitChars` as the HUD computes it, a token
 * count is the plan's (exact, or `≈` for an estimate).
 */
import { h, headed, type Child } from './dom.js';
import {
  AUTHORITIES,
  eventMinute,
  authorityLabel,
  cacheClassLabel,
  eventSize,
  exactTokens,
  formatNumber,
  formatPercent,
  formatShare,
  formatTime,
  layoutEvent,
  lineRangeText,
  percentOf,
  prefixTokens,
  promptPercent,
  runHash,
  sessionJson,
  shareOf,
  tokensNote,
  type BlockView,
  type BoundaryView,
  type EventLayout,
  type Hud,
  type Recall,
  type Receipts,
  type TraceAbsent,
  type TraceEvent,
  type TraceListing,
  type TraceRealtime,
  type TraceRefresh,
  type TraceSource,
} from './model.js';
import { authorityClass, definitions, outcomeClass, sha } from './views.js';
import { sentSection } from './prompt-view.js';

/**
 * One event: its facts, its failure, what a refresh sent (unless the page says it above:
 * `sentAbove`), the delivered prompt, its blocks and the rest; folded unless `open`.
 */
export function renderEvent(event: TraceEvent, heading: string, open: boolean, sentAbove = false): HTMLElement {
  const layout = layoutEvent(event);
  const details = h(
    'details',
    { class: 'event-details' },
    h(
      'summary',
      {},
      h('h2', {}, heading),
      h('span', { class: 'muted small' }, ` traced ${formatTime(event.at)} · compiled for ${eventMinute(event)} · `),
      h('span', { class: `status ${outcomeClass(event.outcome)}` }, String(event.status)),
      h('span', { class: 'muted small' }, ` ${event.outcome}`),
    ),
    factsSection(event, open),
    event.error ? failureBox(event.error) : null,
    verification(event),
    event.refresh && !sentAbove ? sentSection(event, copyButton, 'h3') : null,
    event.systemPrompt !== null ? promptSection(event) : null,
    event.blocks?.length ? budgetSection(layout, event.chars) : null,
    event.blocks?.length ? blocksSection(layout, event.chars) : null,
    event.blocks?.length || layout.boundaries.length ? cacheSection(layout) : null,
    redactionsAndWarnings(event, layout),
    event.recall || event.receipts ? governanceSection(event.recall, event.receipts, layout) : null,
    event.verifySkipped ? h('p', { class: 'verified bad verify-skipped', role: 'alert' }, `✗ Brain files not checked: ${event.verifySkipped}.`) : null,
    event.sources ? sourcesSection(event.sources, event.absent ?? [], event.listings ?? []) : null,
    event.realtime ? realtimeSection(event, event.realtime) : null,
    event.hud || event.hudRejected ? hudSection(event.hud, event.hudRejected, event.chars) : null,
    digestsSection(event),
    rawRequest(event),
  );
  details.open = open;
  return h('article', { class: 'event', data: { outcome: event.outcome } }, details);
}

export function failureBox(error: NonNullable<TraceEvent['error']>): HTMLElement {
  return h(
    'div',
    { class: 'problem failure', role: 'alert' },
    h('strong', {}, `Failed: ${error.status}`),
    h('code', { class: 'problem-code' }, error.code),
    h('p', {}, error.detail),
    h('p', { class: 'muted' }, 'Nothing was delivered for this compile.'),
  );
}

/**
 * The event's own facts, those the run's summary card does not say: the route, the caller and
 * surface, the refresh's parent, and for an earlier event its size and request id (the card
 * says the latest's). Voice and tools are in the realtime section.
 */
function factsSection(event: TraceEvent, latest: boolean): HTMLElement {
  return h(
    'section',
    { class: 'summary' },
    definitions([
      ['route', h('code', {}, event.route)],
      ['caller', event.caller ? h('span', { class: 'caller' }, event.caller) : null],
      ['surface', event.surface ?? null],
      ['size', latest ? null : event.outcome === 'failed' ? 'nothing delivered' : h('span', { class: 'event-size' }, eventSize(event))],
      ['parent run', event.parentRunId ? h('a', { href: runHash(event.parentRunId), class: 'parent-run' }, event.parentRunId) : null],
      ['refresh', event.refresh ? h('span', { class: 'refresh-changes' }, refreshText(event.refresh)) : null],
      ['request id', !latest && event.requestId ? h('code', { class: 'request-id' }, event.requestId) : null],
      ['traceparent', event.traceparent ? h('code', { class: 'traceparent' }, event.traceparent) : null],
    ]),
  );
}

/** What a mid-call refresh changed since the connect, per block, in lines. */
function refreshText(refresh: TraceRefresh): string {
  if (refresh.changes.length === 0) return 'no change since the connect';
  const changes = refresh.changes.map((change) => `${change.block}: +${change.added} −${change.removed} lines`).join(' · ');
  return `${changes} (${formatNumber(refresh.chars)} chars, ${refresh.provider})`;
}

/** The recorded request and timings, folded: identifiers and options, most of them null. */
function rawRequest(event: TraceEvent): HTMLElement {
  const entries = Object.entries(event.request);
  return h(
    'details',
    { class: 'raw-request' },
    h('summary', {}, `Request as recorded (${entries.length} fields) and timing`),
    h(
      'p',
      { class: 'request' },
      entries.map(([key, value]) => h('span', { class: 'pair' }, h('span', { class: 'key' }, key), ' ', typeof value === 'string' ? value : JSON.stringify(value))),
    ),
    event.timing ? h('p', { class: 'muted small' }, Object.entries(event.timing).map(([key, value]) => `${key} ${value} ms`).join(' · ')) : null,
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

/** Blocks of at least this share of the bar carry their kind inside it; the others on hover and in the list below. */
const LABELLED_SHARE = 7;

/**
 * The blocks as a bar scaled to the characters delivered (not to the limit, which would
 * leave slivers), each block as wide as it is, labelled when it has room; the cache
 * boundaries as dashed lines; the limit as a marker — at its place when it is near, else at
 * the bar's end with how far it is.
 */
/** `34.2 % of the 24,000-char budget`: the budget said as a share of its limit, so no second size figure stands beside the one delivered. */
export function budgetWords(used: number, limit: number): string {
  return `${formatShare(shareOf(used, limit))} of the ${formatNumber(limit)}-char budget`;
}

function budgetSection(layout: EventLayout, delivered: number): HTMLElement {
  const { usedChars, limitChars } = layout;
  const end = Math.max(usedChars, ...layout.blocks.map((view) => view.start + view.chars), 1);
  const limitNear = limitChars !== null && limitChars <= end * 1.25;
  const scale = limitNear ? Math.max(limitChars, end) : end;
  const bar = h('div', { class: 'bar', role: 'img', ariaLabel: 'blocks as parts of the delivered prompt, with cache boundaries and the limit' });
  for (const view of layout.blocks) {
    const width = percentOf(view.chars, scale);
    const segment = h(
      'div',
      {
        class: `bar-block ${authorityClass(view.block.authority)}`,
        title: `#${view.index} ${view.block.kind} · ${authorityLabel(view.block.authority)} · ${formatNumber(view.block.chars)} chars (${formatPercent(promptPercent(view.block.chars, delivered))} of the prompt)`,
        data: { block: String(view.index) },
      },
      width >= LABELLED_SHARE ? h('span', { class: 'bar-label' }, view.block.kind) : null,
    );
    segment.style.left = `${percentOf(view.start, scale)}%`;
    segment.style.width = `${width}%`;
    bar.append(segment);
  }
  const lane = h('div', { class: 'boundary-lane' });
  layout.boundaries.forEach((boundary, row) => {
    const left = percentOf(boundary.prefixChars, scale);
    const below = boundary.belowMinimum === true;
    const marker = h('div', { class: `bar-boundary${below ? ' below-minimum' : ''}`, title: `cache checkpoint after ${boundary.afterBlock} (${cacheClassLabel(boundary.class)})` });
    marker.style.left = `${left}%`;
    bar.append(marker);
    const label = h(
      'div',
      { class: `boundary-label${left > 55 ? ' flip' : ''}${below ? ' below-minimum' : ''}`, data: { boundary: boundary.class } },
      h('span', { class: 'boundary-class', title: boundary.class }, cacheClassLabel(boundary.class)),
      ` · ${boundaryTokens(boundary, layout.tokenizer)}`,
    );
    label.style.left = `${left}%`;
    label.style.top = `${row * 1.7}em`;
    lane.append(label);
  });
  lane.style.height = `${Math.max(1, layout.boundaries.length) * 1.7 + 0.3}em`;
  if (limitChars !== null) {
    const limit = h('div', { class: `bar-limit${limitNear ? '' : ' off-scale'}`, title: `the budget's limit: ${formatNumber(limitChars)} chars` });
    limit.style.left = `${limitNear ? percentOf(limitChars, scale) : 100}%`;
    bar.append(limit);
  }
  const kinds = new Set(layout.blocks.map((view) => view.block.authority));
  return h(
    'section',
    { class: 'budget' },
    h('h3', {}, 'Budget'),
    h(
      'p',
      { class: 'budget-figures' },
      limitChars !== null
        ? `${formatNumber(delivered)} chars delivered: ${budgetWords(usedChars, limitChars)} (the limit also counts the blank line between the two prompts).`
        : `${formatNumber(delivered)} chars delivered; no limit recorded.`,
      Object.entries(layout.omitted).some(([, count]) => count > 0)
        ? ` Left out to fit: ${Object.entries(layout.omitted)
            .filter(([, count]) => count > 0)
            .map(([kind, count]) => `${count} ${kind}`)
            .join(', ')}.`
        : null,
    ),
    h(
      'div',
      { class: 'bar-wrap' },
      h('div', { class: 'bar-scale muted small' }, h('span', {}, '0'), h('span', { class: 'bar-scale-end' }, limitNear ? `${formatNumber(scale)} chars` : `the whole prompt`)),
      bar,
      limitChars !== null && !limitNear ? h('p', { class: 'bar-limit-note muted small' }, `limit ${formatNumber(limitChars)} chars → (${formatNumber(Math.round((limitChars / end) * 10) / 10)}× this prompt), off the bar`) : null,
      lane,
    ),
    belowMinimumLine(layout),
    h(
      'p',
      { class: 'legend' },
      [...AUTHORITIES, ...[...kinds].filter((kind) => !(AUTHORITIES as readonly string[]).includes(kind))].map((authority) =>
        h('span', { class: 'legend-item', title: authority }, h('span', { class: `swatch ${authorityClass(authority)}` }), authorityLabel(authority)),
      ),
      h('span', { class: 'legend-item' }, h('span', { class: 'swatch boundary' }), 'cache checkpoint'),
      limitChars !== null ? h('span', { class: 'legend-item' }, h('span', { class: 'swatch limit' }), 'limit') : null,
    ),
  );
}

/** `1,934 tokens, 7,012 chars` (exact), or `≈1,855 tokens, …` for an estimate. */
function boundaryTokens(boundary: BoundaryView, tokenizer: string | null): string {
  const tokens = prefixTokens(boundary, tokenizer);
  return `${tokens === null ? '' : `${tokens} tokens, `}${formatNumber(boundary.prefixChars)} chars`;
}

/** The boundaries below the providers' minimum, said once for the whole prompt. */
function belowMinimumLine(layout: EventLayout): Child {
  const below = layout.boundaries.filter((boundary) => boundary.belowMinimum === true);
  if (below.length === 0) return null;
  const minimum = layout.minimumTokens === null ? 'the providers’' : `the ${formatNumber(layout.minimumTokens)}-token`;
  const which = below.length === layout.boundaries.length ? `All ${below.length} cache checkpoints are` : `${below.length} of ${layout.boundaries.length} cache checkpoints (${below.map((boundary) => cacheClassLabel(boundary.class)).join(', ')}) are`;
  return h('p', { class: 'below-minimum-line', role: 'note' }, h('span', { class: 'flag' }, 'not cacheable'), ` ${which} below ${minimum} minimum: providers will not cache the prompt up to them.`);
}

function blocksSection(layout: EventLayout, delivered: number): HTMLElement {
  const byIndex = new Map<number, BoundaryView[]>();
  for (const boundary of layout.boundaries) {
    if (boundary.blockIndex === null) continue;
    byIndex.set(boundary.blockIndex, [...(byIndex.get(boundary.blockIndex) ?? []), boundary]);
  }
  const list = h('ol', { class: 'blocks' });
  for (const view of layout.blocks) {
    list.append(blockItem(view, delivered));
    for (const boundary of byIndex.get(view.index) ?? []) {
      list.append(
        h(
          'li',
          { class: `boundary-row${boundary.belowMinimum ? ' below-minimum' : ''}` },
          `cache checkpoint · ${cacheClassLabel(boundary.class)} · ${boundaryTokens(boundary, layout.tokenizer)}`,
          boundary.belowMinimum ? ' · not cacheable' : null,
          ' · ',
          sha(boundary.prefixSha256, 'prefix'),
        ),
      );
    }
  }
  const expand = h(
    'button',
    {
      type: 'button',
      class: 'secondary small',
      onClick: () => {
        const open = expand.textContent === 'Expand all';
        for (const details of list.querySelectorAll('details')) details.open = open;
        expand.textContent = open ? 'Collapse all' : 'Expand all';
      },
    },
    'Expand all',
  );
  return h(
    'section',
    { class: 'blocks-section' },
    headed('h3', `Blocks (${layout.blocks.length})`, expand),
    h('p', { class: 'muted small' }, 'Share: the block’s characters in percent of the prompt delivered, as the files read count it. Tokens are exact when the cache plan’s are (a checkpoint’s tokens are its blocks’ and the tool definitions’); ≈ marks an estimate (bytes / 4).'),
    list,
  );
}

function blockItem(view: BlockView, delivered: number): HTMLElement {
  const { block } = view;
  return h(
    'li',
    { class: `block ${authorityClass(block.authority)}`, data: { block: String(view.index), kind: block.kind } },
    h(
      'div',
      { class: 'block-head' },
      h('span', { class: 'block-kind' }, block.kind),
      h('span', { class: `chip ${authorityClass(block.authority)}`, title: block.authority }, authorityLabel(block.authority)),
      h('span', { class: 'cache-class', title: block.cacheClass }, cacheClassLabel(block.cacheClass)),
      h('code', { class: 'source', title: block.source }, block.source),
      h('span', { class: 'num' }, `${formatNumber(block.chars)} chars`),
      block.tokens !== undefined
        ? h('span', { class: 'num block-tokens', title: 'exact: its label line to the next block’s, as the cache plan counts it' }, `${formatNumber(block.tokens)} tokens`)
        : h('span', { class: 'num block-tokens', title: 'estimate (bytes / 4)' }, `≈${formatNumber(block.approxTokens)} tokens`),
      h('span', { class: 'num share', title: 'of the prompt delivered' }, formatPercent(promptPercent(block.chars, delivered))),
      sha(block.sha256, 'content'),
    ),
    view.text !== null || view.delivered !== null
      ? h('details', {}, h('summary', {}, view.place === 'input' ? 'text (decoded from its input line)' : 'text'), h('pre', { class: 'block-text' }, view.text ?? view.delivered))
      : h('p', { class: 'muted small' }, 'Text not recorded for this block.'),
  );
}

function cacheSection(layout: EventLayout): HTMLElement {
  return h(
    'section',
    { class: 'cache' },
    h('h3', {}, 'Cache plan'),
    definitions([
      ['provider cache key', layout.routeKey ? h('code', { class: 'route-key', title: 'the route key: send it as the provider’s prompt_cache_key' }, layout.routeKey) : null],
      ['engine', layout.routeKey ? (layout.engine !== null ? h('code', { class: 'engine' }, layout.engine) : h('span', { class: 'muted' }, 'none named')) : null],
      ['provider', layout.provider !== null ? h('span', { class: 'cache-provider' }, layout.caching === 'none' ? `${layout.provider}: caches nothing` : layout.provider) : null],
      ['provider minimum', layout.minimumTokens !== null ? `${formatNumber(layout.minimumTokens)} tokens` : null],
      [
        'tokens counted by',
        layout.tokenizer !== null
          ? h('span', {}, h('code', { class: 'tokenizer' }, layout.tokenizer), exactTokens(layout.tokenizer) ? ' (exact)' : ' (an estimate: ≈)')
          : null,
      ],
      ['tool definitions', layout.toolTokens !== null ? `${formatNumber(layout.toolTokens)} tokens, in every checkpoint` : null],
    ]),
    layout.boundaries.length
      ? h(
          'div',
          { class: 'table-wrap' },
          h(
            'table',
            { class: 'boundaries' },
            h('thead', {}, h('tr', {}, ['checkpoint', 'after block', 'up to it', 'tokens', 'cacheable', 'sha256'].map((label) => h('th', label === 'tokens' ? { title: tokensNote(layout.tokenizer) } : {}, label)))),
            h(
              'tbody',
              {},
              layout.boundaries.map((boundary) =>
                h(
                  'tr',
                  {},
                  h('td', { title: boundary.class }, cacheClassLabel(boundary.class)),
                  h('td', {}, boundary.blockIndex !== null ? `#${boundary.blockIndex} ${boundary.afterBlock}` : boundary.afterBlock),
                  h('td', { class: 'num' }, `${formatNumber(boundary.prefixChars)} chars`),
                  h(
                    'td',
                    { class: 'num', ...(boundary.tokens !== null && boundary.approxTokens !== null ? { title: `estimate ≈${formatNumber(boundary.approxTokens)}` } : {}) },
                    prefixTokens(boundary, layout.tokenizer) ?? '—',
                  ),
                  h('td', {}, boundary.belowMinimum === null ? '—' : boundary.belowMinimum ? h('span', { class: 'muted' }, 'no: below minimum') : h('span', { class: 'ok' }, 'yes')),
                  h('td', {}, sha(boundary.prefixSha256, 'prefix', false)),
                ),
              ),
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'No cache checkpoints recorded.'),
  );
}

/** A worker compile's recall decision and receipts: what shaped the prompt, as the trace recorded it. */
function governanceSection(recall: Recall | undefined, receipts: Receipts | undefined, layout: EventLayout): HTMLElement {
  const preferences = receipts ? Object.entries(receipts.preferences) : [];
  // A receipt's digest is its block's: name the block, whose content sha256 the blocks list shows too.
  const blockOf = (digest: string | null) => layout.blocks.find((view) => view.block.sha256 === digest);
  const blockRef = (digest: string | null) => {
    const view = blockOf(digest);
    return view ? h('span', { class: 'muted small' }, ` (block #${view.index} ${view.block.kind})`) : null;
  };
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
                sha(receipts.role.sha256, 'content'),
                blockRef(receipts.role.sha256),
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
              receipts.blueprint.sha256 ? [' ', sha(receipts.blueprint.sha256, 'content'), blockRef(receipts.blueprint.sha256)] : null,
            )
          : null,
      ],
      [
        'experiences',
        receipts
          ? receipts.experiences.length > 0
            ? h('ul', { class: 'experiences' }, receipts.experiences.map((item) => h('li', {}, h('code', {}, item.sourceRef), ' ', sha(item.sha256, 'content'))))
            : 'none'
          : null,
      ],
      ['preferences', receipts ? (preferences.length > 0 ? preferences.map(([key, value]) => `${key} ${value}`).join(' · ') : 'none') : null],
    ]),
    h('p', { class: 'muted small' }, 'A receipt’s content sha256 is its block’s (the text delivered), not its file’s: the file sha256 is under “Brain files read”.'),
  );
}

function digestsSection(event: TraceEvent): Child {
  if (!event.promptSha256 && !event.inputSha256) return null;
  return h(
    'section',
    { class: 'digests' },
    h('h3', {}, 'Digests'),
    definitions([
      ['promptSha256', event.promptSha256 ? h('span', {}, h('code', { class: 'sha full' }, event.promptSha256), h('span', { class: 'muted small' }, ' sha256 of the systemPrompt bytes')) : null],
      ['inputSha256', event.inputSha256 ? h('span', {}, h('code', { class: 'sha full' }, event.inputSha256), h('span', { class: 'muted small' }, ' sha256 of the inputPrompt bytes')) : 'none (no input prompt)'],
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
        h('td', {}, sha(source.sha256, source.truncated ? 'bytes read' : 'file', false)),
        h('td', {}, sourceState(source)),
      ),
    ),
    ...listings.map((listing) =>
      h(
        'tr',
        { data: { path: `${listing.path}/` } },
        h('td', {}, h('code', {}, `${listing.path}/`), h('span', { class: 'muted' }, ' (listed)')),
        h('td', { class: 'num' }, files(listing.count)),
        h('td', {}, sha(listing.sha256, 'file names', false)),
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
      `Brain files then and now (${sources.length})`,
      listings.length ? ` · directories listed (${listings.length})` : '',
      absent.length ? ` · looked for, missing (${absent.length})` : '',
    ),
    rows.length
      ? h('div', { class: 'table-wrap' }, h('table', {}, h('thead', {}, h('tr', {}, ['path', 'size', 'sha256 then', 'now'].map((label) => h('th', {}, label)))), h('tbody', {}, rows)))
      : h('p', { class: 'muted' }, 'No brain files were read.'),
  );
}

/** A part of the prompt in percent, with a bar as long as that percent of the cell: 1.6 % is a sliver, never a full bar. */
function shareCell(percent: number | null): HTMLElement {
  const bar = h('span', { class: 'share-bar' });
  bar.style.width = `${percent === null ? 0 : Math.min(100, percent).toFixed(1)}%`;
  return h('td', { class: 'num share' }, bar, formatPercent(percent));
}

function missingCell(): HTMLElement {
  const cell = h('td', { class: 'muted' }, 'looked for, missing');
  cell.colSpan = 5;
  return cell;
}

/** The HUD: every file the compile looked for, what it read of each, and the share of the budget the blocks built from it take. */
function hudSection(hud: Hud | undefined, rejected: string[] | undefined, delivered: number): HTMLElement {
  if (!hud) {
    return h(
      'section',
      { class: 'hud', role: 'alert' },
      h('h3', {}, 'Files read'),
      h('p', { class: 'flag' }, 'The recorded HUD was rejected when the trace was read back:'),
      h('ul', {}, (rejected ?? []).map((problem) => h('li', {}, problem))),
    );
  }
  const found = hud.files.filter((file) => file.exists).length;
  const shared = new Set((hud.shared ?? []).map((row) => row.kind));
  const rows = hud.files.map((file) =>
    h(
      'tr',
      { data: { path: file.path } },
      h('td', {}, h('code', { title: file.sha256 ? `sha256 of the bytes read: ${file.sha256}` : 'missing' }, file.path)),
      file.exists
        ? [
            h('td', { class: 'num' }, file.bytes === file.size ? `${formatNumber(file.size)} B` : `${formatNumber(file.bytes)} of ${formatNumber(file.size)} B`),
            h('td', { class: 'num', title: 'estimate (bytes / 4)' }, `≈${formatNumber(file.tokens)}`),
            h('td', { class: 'num lines' }, lineRangeText(file.lines)),
            h(
              'td',
              { class: 'hud-blocks' },
              file.blocks.length ? file.blocks.map((kind, i) => [i ? ', ' : '', kind, shared.has(kind) ? h('span', { class: 'muted small', title: 'built from several files, each of which lists it' }, ' (shared)') : null]) : h('span', { class: 'muted' }, '—'),
            ),
            shareCell(promptPercent(file.chars, delivered)),
          ]
        : missingCell(),
    ),
  );
  return h(
    'section',
    { class: 'hud' },
    h('h3', {}, `Files read: ${hud.files.length} looked for, ${found} found`),
    h('p', { class: 'muted small' }, sha(hud.snapshotSha256, 'snapshot of the files read'), ` · ${formatNumber(delivered)} chars delivered; each file’s share is of that prompt`),
    h(
      'div',
      { class: 'table-wrap' },
      h('table', {}, h('thead', {}, h('tr', {}, ['path', 'read', 'tokens read', 'lines', 'blocks built from it', 'share of the prompt'].map((label) => h('th', {}, label)))), h('tbody', {}, rows)),
    ),
    hud.shared?.length
      ? h(
          'p',
          { class: 'muted small shared-blocks' },
          'Built from several files: ',
          hud.shared.map((row, i) => `${i ? '; ' : ''}${row.kind} ${formatPercent(promptPercent(row.chars, delivered))} from ${row.files.join(', ')}`).join(''),
        )
      : null,
    hud.derived.length
      ? h('p', { class: 'muted small derived' }, 'From no file: ', hud.derived.map((row, i) => `${i ? ', ' : ''}${row.kind} (${row.source}) ${formatPercent(promptPercent(row.chars, delivered))}`).join(''))
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
            ', the text being the delivered prompt and the declarations these tools translated to Gemini’s schema.',
          ),
        ]
      : [
          headed('h3', 'Realtime session', session !== null ? copy : null),
          h(
            'p',
            { class: 'muted small' },
            'What the voice server sent at connect: ',
            h('code', {}, '{type: "realtime", instructions, audio: {output: {voice}}, tools}'),
            ', the instructions being the delivered prompt.',
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

/** A button that copies `text` exactly. */
export function copyButton(label: string, text: string, name: string): HTMLButtonElement {
  const element: HTMLButtonElement = h('button', { type: 'button', class: `secondary small ${name}`, onClick: () => void copyText(text, element) }, label);
  return element;
}

/** The prompts byte for byte, folded (the page shows them readable above): what to copy, or to read as the model got them. */
function promptSection(event: TraceEvent): HTMLElement {
  const system = event.systemPrompt ?? '';
  const input = event.inputPrompt;
  const instructions = input === null ? system : `${system}\n\n${input}`;
  const refresh = event.refresh !== undefined && event.refresh.delivery !== 'reconnect';
  const fold = h(
    'details',
    { class: 'prompt-fold' },
    h('summary', {}, refresh ? `The fresh compile it compared, byte for byte (${formatNumber(event.chars)} chars, not sent)` : `The whole prompt, byte for byte (${formatNumber(event.chars)} chars)`),
    h('p', { class: 'muted small' }, 'systemPrompt (the instructions):'),
    h('pre', { class: 'prompt system-prompt' }, system),
    input !== null
      ? [h('p', { class: 'muted small' }, 'inputPrompt (background data and task input, one JSON line per block, for the lowest-privilege channel):'), h('pre', { class: 'prompt input-prompt' }, input)]
      : h('p', { class: 'muted small' }, 'No input prompt.'),
  );
  return h(
    'section',
    { class: 'delivered' },
    headed(
      'h3',
      refresh ? 'Prompt compiled for the refresh' : 'Delivered prompt',
      copyButton('Copy instructions', instructions, 'copy-instructions'),
      copyButton('Copy system prompt', system, 'copy-system'),
      input !== null ? copyButton('Copy input prompt', input, 'copy-input') : null,
    ),
    fold,
  );
}
