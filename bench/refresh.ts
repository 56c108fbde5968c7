/**
 * What a mid-call refresh costs a voice server (a script, not a test): `calls` sequential
 * `refresh()` calls through the client package against a running service — `npm start` on a
 * copy of the example brain — for one mars connect, each a minute later than the one before
 * (as a call goes on), after a warm-up of 50. First with the live context unchanged (every
 * answer a 304), then after one memory line is appended to today's note in the brain copy
 * (every answer a 200 carrying the one-line change and its event; no If-None-Match is sent).
 * Prints p50, p90, p99 and max of each, and the answer size of the 200; and, measured in the
 * same run as the yardstick, a connect (`GET /context/mars`, a new minute each). Each phase
 * runs for one connect per delivery: `conversation-item` (OpenAI), `client-content` (a Gemini
 * 2.5 Live model) and `reconnect` (Gemini 3.1 Live: the 200 carries the whole setup).
 *
 *   cp -r examples/brain /tmp/refresh-brain
 *   BRAIN_ROOT=/tmp/refresh-brain RATE_LIMIT_MAX=100000 npm start &
 *   node --import tsx bench/refresh.ts /tmp/refresh-brain [baseUrl=http://127.0.0.1:8080] [calls=500]
 */
import { appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createClient } from '../packages/client/src/index.js';

const brainRoot = process.argv[2];
if (brainRoot === undefined) throw new Error('usage: bench/refresh.ts <brain copy the service reads> [baseUrl] [calls]');
const baseUrl = process.argv[3] ?? 'http://127.0.0.1:8080';
const calls = Number(process.argv[4] ?? 500);
const WARM_UP = 50;
const CONNECT = Date.parse('2026-11-30T17:05:00Z');

const api = createClient({ baseUrl, token: process.env['CONTEXT_COMPILER_TOKEN'] });
const percentile = (sorted: readonly number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
const summary = (times: number[]) => {
  const sorted = [...times].sort((a, b) => a - b);
  const ms = (value: number) => `${value.toFixed(2)} ms`;
  return `n=${sorted.length} p50 ${ms(percentile(sorted, 50))}  p90 ${ms(percentile(sorted, 90))}  p99 ${ms(percentile(sorted, 99))}  max ${ms(sorted.at(-1)!)}`;
};

/** `calls` refreshes after a warm-up, each a minute later; every answer must be `expected`. */
async function phase(runId: string, delivery: string, expected: 200 | 304, from: number): Promise<{ times: number[]; bytes: number }> {
  const times: number[] = [];
  let bytes = 0;
  for (let i = 0; i < WARM_UP + calls; i++) {
    const now = new Date(CONNECT + (from + i) * 60_000).toISOString();
    const started = performance.now();
    const answer = await api.refresh('mars', runId, { now });
    const elapsed = performance.now() - started;
    const status = 'notModified' in answer ? 304 : 200;
    if (status !== expected) throw new Error(`refresh ${i}: ${status}, not ${expected}`);
    if (!('notModified' in answer) && answer.delivery !== delivery) throw new Error(`refresh ${i}: ${answer.delivery}, not ${delivery}`);
    if (!('notModified' in answer)) bytes = Buffer.byteLength(JSON.stringify(answer));
    if (i >= WARM_UP) times.push(elapsed);
  }
  return { times, bytes };
}

/** One connect per delivery: the query that makes it. */
const DELIVERIES = [
  { delivery: 'conversation-item', query: {} },
  { delivery: 'client-content', query: { provider: 'gemini', model: 'gemini-2.5-flash-native-audio-preview-12-2025' } },
  { delivery: 'reconnect', query: { provider: 'gemini', model: 'gemini-3.1-flash-live-preview' } },
] as const;

try {
  const connects: number[] = [];
  for (let i = 0; i < WARM_UP + calls; i++) {
    const started = performance.now();
    await api.context('mars', { now: new Date(CONNECT + (i + 1) * 60_000).toISOString() });
    if (i >= WARM_UP) connects.push(performance.now() - started);
  }
  const runs: string[] = [];
  for (const { query } of DELIVERIES) runs.push((await api.context('mars', { now: new Date(CONNECT).toISOString(), ...query })).runId);
  const unchanged = [];
  for (const [index, { delivery }] of DELIVERIES.entries()) unchanged.push(await phase(runs[index]!, delivery, 304, 1));
  await appendFile(join(brainRoot, 'memory/2026-11-30.md'), `- Felt a quiet joy at the harbour lighthouse after call ${Date.now().toString(36)}.\n`);
  const changed = [];
  for (const [index, { delivery }] of DELIVERIES.entries()) changed.push(await phase(runs[index]!, delivery, 200, 1));
  process.stdout.write(`connect                             ${summary(connects)}\n`);
  for (const [index, { delivery }] of DELIVERIES.entries()) {
    process.stdout.write(`304 (unchanged)  ${delivery.padEnd(18)} ${summary(unchanged[index]!.times)}\n`);
    process.stdout.write(`200 (one line)   ${delivery.padEnd(18)} ${summary(changed[index]!.times)}  answer ${changed[index]!.bytes} bytes\n`);
  }
} finally {
  await api.close();
}
