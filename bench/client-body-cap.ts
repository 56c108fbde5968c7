/**
 * What an oversized answer costs a voice server (a script, not a test): a stand-in service on
 * loopback answers `realtimeSession()` with a body of `megabytes` MB, pushed as fast as the
 * client takes it, under a budget long enough that only the client's byte cap can stop it.
 * Prints how the call connected, after how long, how many MB the server pushed before the
 * client hung up, and the client's peak resident memory over its start.
 *
 *   node --expose-gc --import tsx bench/client-body-cap.ts [megabytes=400] [runs=3]
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createClient } from '../packages/client/src/index.js';

const megabytes = Number(process.argv[2] ?? 400);
const runs = Number(process.argv[3] ?? 3);
const chunk = Buffer.alloc(256 * 1024, 'x');

async function oneRun(): Promise<string> {
  const total = megabytes * 1024 * 1024;
  let pushed = 0;
  const push = (response: ServerResponse) => {
    while (pushed < total && !response.destroyed) {
      pushed += chunk.length;
      if (!response.write(chunk)) return void response.once('drain', () => push(response));
    }
    if (!response.destroyed) response.end('"}}');
  };
  const server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.write('{"runId":"r","session":{"type":"realtime","instructions":"');
    push(response);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const api = createClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, timeoutMs: 120_000, realtime: { budgetMs: 120_000 } });
  (globalThis as { gc?: () => void }).gc?.();
  const start = process.memoryUsage().rss;
  let peak = 0;
  const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss - start)), 1);
  const started = performance.now();
  const result = await api.realtimeSession('venus');
  const ms = performance.now() - started;
  clearInterval(sample);
  peak = Math.max(peak, process.memoryUsage().rss - start);
  await api.close();
  server.closeAllConnections();
  server.close();
  const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);
  return `${megabytes} MB body: ${result.source} session (${result.fallback}) after ${ms.toFixed(0)} ms; the server pushed ${mb(pushed)} MB; client RSS peak +${mb(peak)} MB`;
}

for (let run = 0; run < runs; run++) process.stdout.write(`${await oneRun()}\n`);
