import { compileMinute, minuteChange, REASON_TEXT, type BlockChange, type BlockTextDiff, type BoundaryChange, type ComparedEvent, type Reason, type RunComparison } from '../../ui/src/compare.js';
import { formatNumber, prefixTokens, shortSha, type BoundaryView } from '../../ui/src/model.js';
import { diffHunks } from '../../ui/src/text-diff.js';
import { table } from './table.js';

/**
 * Renders the comparison of two runs for people at a terminal, as the viewer's compare page
 * shows it (the same `compareRuns` and the same reasons): the two runs, what differs, the
 * cache boundaries that held or moved and why, the blocks, then the text diff of every block
 * that differs. Pure; text from the traces is made inert by the CLI.
 */
export function formatDiff(comparison: RunComparison, texts: ReadonlyMap<number, BlockTextDiff>): string {
  const changed = comparison.blocks.filter((block) => block.change !== 'unchanged');
  const moved = comparison.boundaries.filter((boundary) => boundary.change !== 'held');
  const lines = [
    ...table([
      ['', 'run', 'traced (UTC)', 'compiled for (UTC)', 'event', 'status', 'route key'],
      runRow('before', comparison.before),
      runRow('after', comparison.after),
    ]),
    '',
    `${changed.length} of ${comparison.blocks.length} blocks differ; ${moved.length} of ${comparison.boundaries.length} cache boundaries moved; ` +
      (comparison.routeKey.before === comparison.routeKey.after ? 'the route key held.' : 'the route key changed (a new provider cache).'),
  ];
  if (!comparison.sameSubject) lines.push('These runs compile different subjects: blocks are paired by kind, and few will match.');
  lines.push('', 'what differs:', ...differences(comparison).map((line) => `  ${line}`));
  lines.push(
    '',
    'cache boundaries:',
    ...table([
      ['class', 'before', 'after', 'change', 'why'],
      ...comparison.boundaries.map((boundary) => [
        boundary.class,
        prefix(boundary.before, comparison.tokenizer.before),
        prefix(boundary.after, comparison.tokenizer.after),
        boundary.change,
        boundaryWhy(boundary),
      ]),
    ]),
  );
  lines.push(
    '',
    'blocks:',
    ...table([
      ['block', 'source', 'chars', 'change', 'why'],
      ...comparison.blocks.map((block) => [blockLabel(block), (block.after ?? block.before)!.block.source, chars(block), block.change, block.reasons.map(reasonText).join('; ')]),
    ]),
  );
  comparison.blocks.forEach((block, index) => {
    const text = texts.get(index);
    if (text === undefined) return;
    lines.push('', `${blockLabel(block)} (${(block.after ?? block.before)!.block.source}) ${block.change}:`);
    if (text.kind === 'not-shown') lines.push(`  text not shown: ${text.reason}`);
    else if (text.diff.kind === 'same') lines.push('  the same text (only its label or encoding differs)');
    else if (text.diff.kind === 'too-different') lines.push(`  changed, too different to show (${text.diff.reason})`);
    else {
      const digest = (side: 'before' | 'after') => (block[side] ? shortSha(block[side].block.sha256) : `no ${side} block`);
      lines.push(`  ${text.diff.added} line${text.diff.added === 1 ? '' : 's'} added, ${text.diff.removed} removed; each text checked against its content sha256: ${digest('before')} → ${digest('after')}`);
      for (const item of diffHunks(text.diff.lines)) {
        if (item.op === 'skip') lines.push(`  … ${formatNumber(item.lines)} unchanged line${item.lines === 1 ? '' : 's'}`);
        else lines.push(`${item.op === 'added' ? '+' : item.op === 'removed' ? '-' : ' '} ${item.text}`);
      }
    }
  });
  return `${lines.join('\n')}\n`;
}

function runRow(side: string, compared: ComparedEvent): string[] {
  const { event } = compared;
  const routeKey = typeof event.cache?.['routeKey'] === 'string' ? (event.cache['routeKey'] as string) : '-';
  return [
    side,
    compared.runId,
    new Date(event.at).toISOString().slice(0, 19).replace('T', ' '),
    compileMinute(event).replace('T', ' '),
    `${compared.index + 1} of ${compared.count}`,
    `${event.status} ${event.outcome}`,
    routeKey,
  ];
}

function reasonText(reason: Reason): string {
  return `${REASON_TEXT[reason.kind]}${reason.details.length > 0 ? `: ${reason.details.join(', ')}` : ''}`;
}

function differences(comparison: RunComparison): string[] {
  const { minute, sources, request, requestText, realtime } = comparison;
  const out = [minute.before === minute.after ? `compiled for the same minute (${minute.before.replace('T', ' ')} UTC)` : `${REASON_TEXT.minute}: ${minuteChange(minute)}`];
  if (sources.length === 0) out.push('the same brain files, with the same bytes');
  for (const source of sources) {
    out.push(`${REASON_TEXT.sources}: ${source.path} ${source.change}${source.names?.length ? ` (${source.names.join(', ')})` : ''} (${shortSha(source.before)} → ${shortSha(source.after)})`);
  }
  if (request.length === 0 && requestText.length === 0) out.push('the same request identifiers and options');
  for (const change of request) out.push(`${REASON_TEXT.request}: ${change.field} ${change.before} → ${change.after}`);
  for (const field of requestText) out.push(`${REASON_TEXT.request}: the ${field} text (not a recorded field; its block differs)`);
  if (realtime) {
    const voice = realtime.voice.before === realtime.voice.after ? `voice ${realtime.voice.after ?? '-'} held` : `voice ${realtime.voice.before ?? '-'} → ${realtime.voice.after ?? '-'}`;
    const tools = realtime.toolsChanged ? `tools changed${realtime.added.length ? ` (+${realtime.added.join(', +')})` : ''}${realtime.removed.length ? ` (-${realtime.removed.join(', -')})` : ''}` : 'the same tools';
    out.push(`realtime session: ${voice}; ${tools}`);
  }
  return out;
}

function prefix(boundary: BoundaryView | null, tokenizer: string | null): string {
  if (!boundary) return '-';
  const tokens = prefixTokens(boundary, tokenizer);
  return `${formatNumber(boundary.prefixChars)} chars${tokens === null ? '' : `, ${tokens} tokens`}${boundary.belowMinimum ? ', below minimum' : ''}`;
}

function blockLabel(change: BlockChange): string {
  return `#${(change.after ?? change.before)!.index} ${change.kind}`;
}

function chars(change: BlockChange): string {
  const [then, now] = [change.before?.block.chars, change.after?.block.chars];
  if (then === undefined) return `- → ${formatNumber(now!)}`;
  if (now === undefined) return `${formatNumber(then)} → -`;
  return then === now ? formatNumber(now) : `${formatNumber(then)} → ${formatNumber(now)}`;
}

function boundaryWhy(boundary: BoundaryChange): string {
  if (boundary.change === 'held') return 'same prefix sha256: still cached';
  if (boundary.change !== 'moved') return `only the ${boundary.change === 'added' ? 'newer' : 'older'} run has this cache class`;
  if (!boundary.cause) return 'the prefix differs outside the recorded blocks';
  return `${blockLabel(boundary.cause)} ${boundary.cause.change}: ${boundary.cause.reasons.map(reasonText).join('; ')}`;
}
