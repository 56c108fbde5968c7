/**
 * `context-compiler status [--url]`: is the service ready, how many of its compiles fail, and
 * how many connects it answered without a session (each a fallback on the voice server).
 * Readiness from `/readyz`; the counts from `/metrics` (the only place they are kept), read
 * with a linear parser of the few series needed and a bound on the bytes read. Exits 1 when
 * the service is not ready or cannot be reached.
 */
import type { Values } from './options.js';
import { samplesOf, type Sample } from './metrics-text.js';
import type { Printer } from './print.js';

/** The routes that compile and deliver a prompt: their requests are what a compile failure is a share of. */
export const COMPILE_ROUTES: ReadonlySet<string> = new Set(['/compile', '/context/:persona', '/context/topic/:topicId', '/context/:persona/refresh']);
/** A voice call's connect: an answer other than a session (a 4xx or 5xx) makes the voice server fall back. */
export const CONNECT_ROUTE = '/context/:persona';
const SERIES = new Set(['cc_http_requests_total', 'cc_compile_failures_total']);
/** /metrics with prom-client's default series is tens of KB; a bound, not a budget. */
const MAX_METRICS_BYTES = 4 * 1024 * 1024;
const DEFAULT_URL = 'http://127.0.0.1:8080';

export interface ServiceCounts {
  /** Requests to the compile routes, and those that delivered no prompt, by problem code. */
  compiles: { requests: number; failures: number; byCode: Record<string, number> };
  /** Connects (`GET /context/:persona`), and those answered 4xx or 5xx: the voice server fell back on each. */
  connects: { requests: number; withoutSession: number };
}

/** The counts `status` prints, from the samples of /metrics (counted since each replica's start, summed over workers and routes). */
export function countsOf(samples: readonly Sample[]): ServiceCounts {
  const counts: ServiceCounts = { compiles: { requests: 0, failures: 0, byCode: {} }, connects: { requests: 0, withoutSession: 0 } };
  for (const { name, labels, value } of samples) {
    const route = labels['route'] ?? '';
    if (name === 'cc_compile_failures_total') {
      const code = labels['code'] ?? 'unknown';
      counts.compiles.failures += value;
      counts.compiles.byCode[code] = (counts.compiles.byCode[code] ?? 0) + value;
    } else if (COMPILE_ROUTES.has(route)) {
      counts.compiles.requests += value;
      if (route === CONNECT_ROUTE) {
        counts.connects.requests += value;
        if (Number(labels['status']) >= 400) counts.connects.withoutSession += value;
      }
    }
  }
  return counts;
}

const percent = (part: number, whole: number) => (whole === 0 ? '' : ` (${((100 * part) / whole).toFixed(1)} %)`);

/** The lines `status` prints for `counts`. */
export function formatCounts(counts: ServiceCounts): string[] {
  const { compiles, connects } = counts;
  const codes = Object.entries(compiles.byCode)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([code, n]) => `${code} ${n}`)
    .join(', ');
  return [
    `compile failures: ${compiles.failures} of ${compiles.requests} requests to compile routes${percent(compiles.failures, compiles.requests)}${codes === '' ? '' : `: ${codes}`}`,
    `connect fallbacks: ${connects.withoutSession} of ${connects.requests} connects answered without a session${percent(connects.withoutSession, connects.requests)} (the voice server fell back on each; its cc_client_fallbacks_total counts timeouts and network failures too)`,
  ];
}

export async function status(values: Values, env: NodeJS.ProcessEnv, out: Printer): Promise<number> {
  const { print, printJson } = out;
  const url = values.url ?? env['CONTEXT_COMPILER_URL'] ?? DEFAULT_URL;
  const { ContextCompilerError, createClient } = await import('../client.js');
  const client = createClient({ baseUrl: url, maxBodyBytes: MAX_METRICS_BYTES, ...(env['CONTEXT_COMPILER_TOKEN'] ? { token: env['CONTEXT_COMPILER_TOKEN'] } : {}) });
  try {
    let checks: Array<{ name: string; ok: boolean; reason?: string }>;
    try {
      checks = (await client.ready()).checks;
    } catch (error) {
      // 503 CC_NOT_READY names its checks; anything else (no answer, another problem) is a failed command.
      const problemChecks = error instanceof ContextCompilerError && error.code === 'CC_NOT_READY' ? error.problem?.['checks'] : undefined;
      if (!Array.isArray(problemChecks)) throw error;
      checks = problemChecks as typeof checks;
    }
    const ready = checks.every((check) => check.ok);
    let counts: ServiceCounts | null = null;
    let unread: string | null = null;
    try {
      counts = countsOf(samplesOf(await client.metrics(), SERIES));
    } catch (error) {
      unread = error instanceof ContextCompilerError ? `${error.status === 0 ? '' : `${error.status} `}${error.code}: ${error.detail}` : String(error);
    }
    if (values.json === true) {
      await printJson({ url, ready, checks, ...(counts === null ? { metricsError: unread } : counts) });
    } else {
      const failing = checks.filter((check) => !check.ok);
      const lines = [
        `the service at ${url}: ${ready ? 'ready' : 'NOT READY'}`,
        ...(ready ? [`  ${checks.map((check) => `${check.name} ok`).join(', ')}`] : failing.map((check) => `  ${check.name}: ${check.reason ?? 'failing'}`)),
        ...(counts === null ? [`compile failures and connect fallbacks: unknown (/metrics: ${unread})`] : formatCounts(counts)),
      ];
      await print(`${lines.join('\n')}\n`);
    }
    return ready ? 0 : 1;
  } finally {
    await client.close();
  }
}
