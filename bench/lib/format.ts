/** How a target fared: INVALID when a window it involves answered non-2xx or errors. */
export type Verdict = 'pass' | 'fail' | 'invalid' | 'n/a';

export function verdict(ok: boolean, valid = true): Verdict {
  return valid ? (ok ? 'pass' : 'fail') : 'invalid';
}

export const out = (line = '') => process.stdout.write(`${line}\n`);

export const fmt = {
  int: (n: number | null) => (n === null || !Number.isFinite(n) ? '—' : Math.round(n).toLocaleString('en-US')),
  ms: (n: number | null) => (n === null || !Number.isFinite(n) ? '—' : n < 10 ? n.toFixed(2) : n.toFixed(1)),
  mark: (v: Verdict) => ({ pass: 'PASS', fail: 'FAIL', invalid: 'INVALID', 'n/a': '' })[v],
  bytes(bytes: number): string {
    if (!Number.isFinite(bytes) || bytes === 0) return '—';
    return bytes >= 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${Math.round(bytes)} B`;
  },
  /** A window's figures on its progress line: req/s, p99, and what went wrong. */
  window: (w: { requestsPerSecond: number; latencyMs: { p99: number }; non2xx: number; errors: number }) =>
    `${fmt.int(w.requestsPerSecond)} req/s, p99 ${fmt.ms(w.latencyMs.p99)} ms${w.non2xx ? `, ${w.non2xx} non-2xx` : ''}${w.errors ? `, ${w.errors} errors` : ''}`,
  /** A memory window's figures on its progress line: req/s, peak RSS, and what went wrong. */
  memory: (w: { requestsPerSecond: number; serverPeakRssMB: number | null; non2xx: number; errors: number }) =>
    `${fmt.int(w.requestsPerSecond)} req/s, peak RSS ${w.serverPeakRssMB === null ? '—' : `${w.serverPeakRssMB.toFixed(1)} MB`}` +
    `${w.non2xx ? `, ${w.non2xx} non-2xx` : ''}${w.errors ? `, ${w.errors} errors` : ''}`,
};

/** Columns padded to the widest cell: the first left-aligned, the rest right-aligned. */
export function printTable(rows: string[][]): void {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  for (const row of rows) out(row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  '));
}
