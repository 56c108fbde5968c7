import type { Hud, HudFile, LineRange } from '../core/hud.js';
import { table } from './table.js';

/**
 * Renders a compile's HUD for people at a terminal: one row per file looked for, sorted by
 * path, then the blocks built from several files, then those from no file. Pure.
 */

const number = (n: number) => n.toLocaleString('en-US');
const percent = (share: number) => `${(share * 100).toFixed(1)}%`;

/** `1-120` from the start, `last 120` for a tail, `whole` for a file read whole. */
export function lineRange(lines: LineRange | null): string {
  if (lines === null) return 'whole';
  if (lines.from < 0) return lines.to === -1 ? `last ${number(-lines.from)}` : `${number(-lines.from)}-${number(-lines.to)} from the end`;
  return `${number(lines.from)}-${number(lines.to)}`;
}

function fileRow(file: HudFile): string[] {
  if (!file.exists) return [file.path, 'missing', '', '', '', '', ''];
  const bytes = file.bytes === file.size ? number(file.size) : `${number(file.bytes)} of ${number(file.size)}`;
  return [file.path, 'yes', bytes, number(file.tokens), lineRange(file.lines), file.blocks.join(',') || '-', percent(file.share)];
}

export function formatHud(hud: Hud, heading: string): string {
  const found = hud.files.filter((file) => file.exists).length;
  const lines = [
    `${heading} — ${hud.files.length} file${hud.files.length === 1 ? '' : 's'} looked for, ${found} found; snapshot ${hud.snapshotSha256.slice(0, 16)}`,
    `budget: ${number(hud.usedChars)} of ${number(hud.limitChars)} chars used`,
    '',
    ...table([['path', 'exists', 'bytes', 'tokens', 'lines', 'blocks', 'share'], ...hud.files.map(fileRow)]),
  ];
  if (hud.shared && hud.shared.length > 0) {
    lines.push(
      '',
      'built from several files (each lists the block):',
      ...table([['source', 'block', 'chars', 'share', 'files'], ...hud.shared.map((row) => [row.source, row.kind, number(row.chars), percent(row.share), row.files.join(', ')])]),
    );
  }
  if (hud.derived.length > 0) {
    lines.push('', 'from no file:', ...table([['source', 'block', 'chars', 'share'], ...hud.derived.map((row) => [row.source, row.kind, number(row.chars), percent(row.share)])]));
  }
  return `${lines.join('\n')}\n`;
}
