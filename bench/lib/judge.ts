import { fmt, out, printTable, verdict, type Verdict } from './format.js';
import { TARGETS, type RouteKey } from './knobs.js';
import type { WindowKey } from './requests.js';
import type { WindowResult } from './window.js';

export interface Comparison {
  label: string;
  /** The window judged and the one it is compared with (indexes into `windows`). */
  window: number;
  reference: number;
  ratio: number | null;
  target: number;
  direction: 'at least' | 'at most';
  verdict: Verdict;
}
export type Informational = Omit<Comparison, 'target' | 'direction' | 'verdict'>;

function ratioOf(a: number | null, b: number | null): number | null {
  return a === null || b === null || b === 0 ? null : a / b;
}

function compare(label: string, window: WindowResult, reference: WindowResult, ratio: number | null, target: number, direction: Comparison['direction']): Comparison {
  const clean = [window, reference].every((w) => w.non2xx === 0 && w.errors === 0 && w.requests > 0);
  const ok = ratio !== null && (direction === 'at least' ? ratio >= target : ratio <= target);
  return { label, window: window.index, reference: reference.index, ratio, target, direction, verdict: ratio === null ? 'n/a' : verdict(ok, clean) };
}

/** The bare windows on either side of window `index` (the ones its ratio is taken against). */
function nearestBare(windows: readonly WindowResult[], index: number): WindowResult[] {
  const found: WindowResult[] = [];
  for (let i = index - 1; i >= 0; i--) {
    if (windows[i]!.key === 'bare') {
      found.push(windows[i]!);
      break;
    }
  }
  for (let i = index + 1; i < windows.length; i++) {
    if (windows[i]!.key === 'bare') {
      found.push(windows[i]!);
      break;
    }
  }
  return found;
}

/** Window `index`'s req/s over the mean of the constant bare windows beside it (NaN for a bare-side window). */
function overBare(windows: readonly WindowResult[], index: number): { bareRps: number; ratio: number } {
  const window = windows[index]!;
  const beside = window.key === 'bare' || window.key === 'same' || window.key === 'durable' ? [] : nearestBare(windows, index);
  const bareRps = beside.length === 0 ? NaN : beside.reduce((sum, w) => sum + w.requestsPerSecond, 0) / beside.length;
  return { bareRps, ratio: window.requestsPerSecond / bareRps };
}

/** Per route at the fixed minute: its window's figures beside the constant bare route's, and its preflight. */
export function routeSummaries(windows: readonly WindowResult[], targets: ReadonlyArray<{ key: WindowKey; label: string; method: string; url: string }>, preflight: Record<string, unknown>) {
  return targets.map((target) => {
    const index = windows.findIndex((window) => window.key === target.key && window.view === null);
    const window = windows[index]!;
    const { bareRps, ratio } = overBare(windows, index);
    return {
      key: target.key,
      label: target.label,
      method: target.method,
      path: new URL(target.url).pathname + new URL(target.url).search,
      requestsPerSecond: window.requestsPerSecond,
      bareRequestsPerSecond: bareRps,
      ratioToBare: ratio,
      latencyMs: window.latencyMs,
      status: window.status,
      non2xx: window.non2xx,
      errors: window.errors,
      timeouts: window.timeouts,
      serverCpuUsPerRequest: window.serverCpuUsPerRequest,
      serverPeakRssMB: window.serverPeakRssMB,
      bytesPerResponse: window.bytesPerResponse,
      preflight: preflight[target.key],
    };
  });
}

/** The targets' ratios, each between two windows of this run, and the ratios reported without a target. */
export function judgeWindows(windows: readonly WindowResult[], routes: readonly RouteKey[]): { comparisons: Comparison[]; informational: Informational[] } {
  // A persona's windows of the full answer (view null) or of the lean connect answer (`session`).
  const at = (key: WindowKey, route: RouteKey, view: 'session' | null = null) => windows.find((window) => window.key === key && (window.key === route || window.route === route) && window.view === view);
  const comparisons: Comparison[] = [];
  const informational: Informational[] = [];
  const info = (label: string, window: WindowResult, reference: WindowResult, ratio: number | null) => ({ label, window: window.index, reference: reference.index, ratio });
  for (const route of routes.filter((key) => key === 'mars' || key === 'venus')) {
    for (const view of [null, 'session'] as const) {
      const fixed = at(route, route, view);
      if (!fixed) continue;
      // Each answer against the durable same-body route for its own body.
      const name = view === null ? route : `${route} ?view=${view}`;
      const minute = at('minute', route, view);
      const floor = at('durable', route, view);
      for (const [when, window] of [['fixed minute', fixed], ['new minute', minute]] as const) {
        if (!floor || !window) continue;
        comparisons.push(
          compare(`${name}: ${when} / durable same-body, req/s`, window, floor, window.requestsPerSecond / floor.requestsPerSecond, TARGETS.durableRatio, 'at least'),
          compare(`${name}: ${when} / durable same-body, CPU µs per request`, window, floor, ratioOf(window.serverCpuUsPerRequest, floor.serverCpuUsPerRequest), TARGETS.durableCpu, 'at most'),
          compare(`${name}: ${when} / durable same-body, p99`, window, floor, window.latencyMs.p99 / floor.latencyMs.p99, TARGETS.durableP99, 'at most'),
        );
      }
      // Reported, not judged: the plain HTTP ceiling for the same bytes, and what a new minute costs over a fixed one.
      const same = at('same', route, view);
      if (same) {
        informational.push(
          info(`${name}: fixed minute / same-bytes bare (no lstats, no trace), req/s`, fixed, same, fixed.requestsPerSecond / same.requestsPerSecond),
          info(`${name}: fixed minute / same-bytes bare, CPU µs per request`, fixed, same, ratioOf(fixed.serverCpuUsPerRequest, same.serverCpuUsPerRequest)),
        );
      }
      if (minute) informational.push(info(`${name}: new minute / fixed minute, req/s`, minute, fixed, minute.requestsPerSecond / fixed.requestsPerSecond));
      const churn = view === null ? at('churn', route) : undefined;
      if (churn) comparisons.push(compare(`${route}: memory churn / steady, req/s`, churn, fixed, churn.requestsPerSecond / fixed.requestsPerSecond, TARGETS.churnRatio, 'at least'));
    }
  }
  return { comparisons, informational };
}

/** Every window in run order, as the table's rows. */
export function printWindows(windows: readonly WindowResult[]): void {
  const rows: string[][] = [['window', 'req/s', 'x bare', 'p50 ms', 'p97.5 ms', 'p99 ms', 'non-2xx', 'errors', 'CPU µs/req', 'bytes/resp']];
  for (const [index, window] of windows.entries()) {
    const { ratio } = overBare(windows, index);
    rows.push([
      window.key === 'bare' ? `  ${window.label}` : window.label,
      fmt.int(window.requestsPerSecond),
      Number.isFinite(ratio) ? ratio.toFixed(2) : '',
      fmt.ms(window.latencyMs.p50),
      fmt.ms(window.latencyMs.p97_5),
      fmt.ms(window.latencyMs.p99),
      String(window.non2xx),
      String(window.errors),
      window.serverCpuUsPerRequest === null ? '' : fmt.int(window.serverCpuUsPerRequest),
      fmt.bytes(window.bytesPerResponse),
    ]);
  }
  printTable(rows);
}

export function printJudged(comparisons: readonly Comparison[], informational: readonly Informational[]): void {
  out(`targets (a ratio of two windows above; INVALID = a window answered non-2xx or errors):`);
  for (const comparison of comparisons) {
    out(`  ${comparison.label}: ${comparison.ratio === null ? '—' : comparison.ratio.toFixed(2)}  ${fmt.mark(comparison.verdict)} (${comparison.direction} ${comparison.target})`);
  }
  for (const line of informational) out(`  (reported) ${line.label}: ${line.ratio === null ? '—' : line.ratio.toFixed(2)}`);
}

/** A memory window's verdict: its peak RSS within the bound, INVALID when it answered non-2xx or errors. */
export function rssVerdict(window: WindowResult | null): Verdict {
  return window?.serverPeakRssMB == null ? 'n/a' : verdict(window.serverPeakRssMB <= TARGETS.rssMB, window.non2xx === 0 && window.errors === 0);
}

/** The warnings of a run whose figures mean less than they seem. */
export function runWarnings(windows: readonly WindowResult[], traceFiles: number, stopCode: number | null, stopSignal: string | null, workers: { workers: number; processes: number } | null): string[] {
  const warnings: string[] = [];
  const delivered = windows.filter((w) => w.key !== 'bare' && w.key !== 'same' && w.key !== 'durable').reduce((sum, w) => sum + w.requests - w.non2xx, 0);
  if (delivered > 0 && traceFiles === 0) {
    warnings.push(`${delivered.toLocaleString('en-US')} responses were 2xx but the trace store holds no files: durable tracing is not on in this build, so these figures leave out its cost`);
  }
  if (stopCode !== 0) warnings.push(`the server did not exit cleanly on SIGTERM (${stopCode ?? stopSignal})`);
  if (workers && workers.processes < workers.workers + 1) {
    warnings.push(`WORKERS=${workers.workers} ran ${workers.processes} process(es): this build does not start workers`);
  }
  return warnings;
}

