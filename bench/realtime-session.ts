/**
 * What a voice server waits for at connect (a script, not a test): `calls` sequential
 * `realtimeSession()` calls through the client package against a running service — `npm
 * start` on the example brain — alternating mars and venus, each at its own instant (a new
 * minute per call, as calls connect), after a warm-up of 50 calls. Prints p50, p90, p99 and
 * max of the time to a session, per persona and overall, and how many calls fell back
 * (there should be none).
 *
 *   RATE_LIMIT_MAX=100000 npm start &     # the service on 127.0.0.1:8080, the example brain
 *   node --import tsx bench/realtime-session.ts [baseUrl=http://127.0.0.1:8080] [calls=1000]
 *
 * (With the default RATE_LIMIT_MAX of 600 a minute, calls past the 600th within a minute are
 * refused with a 429 and connect on the static session, which this counts as fallbacks.)
 */
import { createClient, type FallbackEvent } from '../packages/client/src/index.js';

const baseUrl = process.argv[2] ?? 'http://127.0.0.1:8080';
const calls = Number(process.argv[3] ?? 1000);
const WARM_UP = 50;
const PERSONAS = ['mars', 'venus'] as const;
const START = Date.parse('2026-11-30T06:00:00Z');

const fallbacks: FallbackEvent[] = [];
const api = createClient({ baseUrl, token: process.env['CONTEXT_COMPILER_TOKEN'], realtime: { onFallback: (event) => fallbacks.push(event) } });

const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

function summary(times: number[]): string {
  const sorted = [...times].sort((a, b) => a - b);
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  return `n=${sorted.length} p50 ${ms(percentile(sorted, 50))}  p90 ${ms(percentile(sorted, 90))}  p99 ${ms(percentile(sorted, 99))}  max ${ms(sorted.at(-1)!)}`;
}

const times: Record<string, number[]> = { mars: [], venus: [] };
try {
  for (let i = 0; i < WARM_UP + calls; i++) {
    const persona = PERSONAS[i % PERSONAS.length]!;
    // A new minute per call, as sessions connect at their own minute.
    const now = new Date(START + i * 60_000).toISOString();
    const started = performance.now();
    await api.realtimeSession(persona, { now });
    const elapsed = performance.now() - started;
    if (i >= WARM_UP) times[persona]!.push(elapsed);
  }
} finally {
  await api.close();
}
for (const persona of PERSONAS) process.stdout.write(`${persona.padEnd(7)} ${summary(times[persona]!)}\n`);
process.stdout.write(`all     ${summary([...times['mars']!, ...times['venus']!])}\n`);
const reasons = fallbacks.reduce<Record<string, number>>((counts, event) => ({ ...counts, [event.reason]: (counts[event.reason] ?? 0) + 1 }), {});
process.stdout.write(`fallbacks: ${fallbacks.length} ${JSON.stringify(reasons)}\n`);
