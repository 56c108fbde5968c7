/**
 * Issue 25 item 3, reproduced: the real server, started as `npm start` starts it, gets a
 * connection burst (2,000 idle sockets, 300 slowloris header drips and 100 slow body drips,
 * all at once) while `/healthz` is probed on a fresh connection every 200 ms and
 * `/context/mars` every 500 ms. Reports the probes' latencies (p50, p99, max, how many took
 * a second or more) and those of probes sent 10 and 25 ms apart while each burst lands, the
 * kernel's listen-queue overflow counters before and after, each burst's SYN retransmits as
 * the kernel recorded them, the server's CPU per burst, and the accept queue as `ss -ltn`
 * saw it.
 *
 *   npm run build && node dist/bench/burst.js
 *
 * Knobs (environment): BURST_IDLE, BURST_HEADER_DRIPS, BURST_BODY_DRIPS, BURST_ROUNDS,
 * BURST_HOLD_S; any of the server's own variables (LISTEN_BACKLOG, MAX_CONNECTIONS, …) is
 * passed to it.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { PROJECT_ROOT } from '../src/config.js';
import { acceptQueue, forkBurst, listenOverflows, probeEvery, processCpuMs, retransmittedConnections, summarize, type ProbeResult } from './connection-burst.js';
import { parseStartCommand } from './start-command.js';

const Knobs = z.object({
  BURST_IDLE: z.coerce.number().int().min(0).max(20_000).default(2000),
  BURST_HEADER_DRIPS: z.coerce.number().int().min(0).max(20_000).default(300),
  BURST_BODY_DRIPS: z.coerce.number().int().min(0).max(20_000).default(100),
  /** Bursts, one after another: each is held BURST_HOLD_S, then every socket of it is closed. */
  BURST_ROUNDS: z.coerce.number().int().min(1).max(100).default(3),
  BURST_HOLD_S: z.coerce.number().int().min(1).max(600).default(8),
});

/** The server as `npm start` runs it (its node flags and entry point), on a free port. */
async function startServer(env: Record<string, string>) {
  const { nodeFlags, entry } = parseStartCommand(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8'));
  const server = spawn(process.execPath, [...nodeFlags, entry], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  process.on('exit', () => server.kill('SIGKILL'));
  let stdout = '';
  server.stdout.on('data', (chunk) => (stdout = (stdout + chunk).slice(-65_536)));
  const port = await new Promise<number>((resolve, reject) => {
    const poll = setInterval(() => {
      const match = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout);
      if (match) {
        clearInterval(poll);
        resolve(Number(match[1]));
      } else if (server.exitCode !== null) {
        clearInterval(poll);
        reject(new Error(`server exited ${server.exitCode}: ${stdout}`));
      }
    }, 25);
  });
  return { server, port, command: ['node', ...nodeFlags, entry].join(' ') };
}

async function main(): Promise<void> {
  const knobs = Knobs.parse(process.env);
  const traceDir = await mkdtemp(join(tmpdir(), 'cc-burst-'));
  const token = randomBytes(24).toString('hex');
  const { server, port, command } = await startServer({ TRACE_DIR: traceDir, CONTEXT_COMPILER_TOKENS: token });

  const limits = await readFile(`/proc/${server.pid}/limits`, 'utf8').catch(() => '');
  const environment = {
    node: process.version,
    start: command,
    serverOpenFiles: /^Max open files\s+(\d+)/m.exec(limits)?.[1] ?? null,
    somaxconn: (await readFile('/proc/sys/net/core/somaxconn', 'utf8').catch(() => '')).trim() || null,
    listenQueue: await acceptQueue(port),
    env: Object.fromEntries(['LISTEN_BACKLOG', 'MAX_CONNECTIONS', 'HEADERS_TIMEOUT'].map((name) => [name, process.env[name] ?? '(default)'])),
    burst: knobs,
  };
  console.info(JSON.stringify({ environment }));

  const clientDelay = monitorEventLoopDelay({ resolution: 10 });
  clientDelay.enable();
  const before = await listenOverflows();
  const mars = { path: '/context/mars', headers: { authorization: `Bearer ${token}` } };
  // The probes, each on a fresh connection, for the whole run.
  const probes = probeEvery(port, [
    { path: '/healthz', everyMs: 200 },
    { ...mars, everyMs: 500 },
  ]);
  let maxQueued = 0;
  const rounds: Array<Record<string, number>> = [];
  /** Probes sent while a burst was being opened, and in the second after. */
  const withBurst: Array<ProbeResult & { amid: boolean }> = [];
  await sleep(1000);
  for (let round = 0; round < knobs.BURST_ROUNDS; round++) {
    const burst = await forkBurst(port, { idle: knobs.BURST_IDLE, headerDrips: knobs.BURST_HEADER_DRIPS, bodyDrips: knobs.BURST_BODY_DRIPS, dripMs: 1000, token });
    const cpuBefore = await processCpuMs(server.pid!);
    // Callers that arrive with the burst, wherever the probes fall: 10 ms apart.
    const dense = probeEvery(port, [
      { path: '/healthz', everyMs: 10 },
      { ...mars, everyMs: 25 },
    ]);
    await sleep(20);
    const { sentAt, openedAt } = await burst.open();
    // The accept queue while the burst lands (ss is a process per look: only the first seconds).
    const watchUntil = performance.now() + 3000;
    while (performance.now() < watchUntil) {
      if (performance.now() > openedAt + 1000) await dense.stop();
      maxQueued = Math.max(maxQueued, (await acceptQueue(port))?.queued ?? 0);
      await sleep(50);
    }
    withBurst.push(...dense.results.filter((result) => result.sentAt >= sentAt).map((result) => ({ ...result, amid: result.sentAt <= openedAt })));
    await sleep(knobs.BURST_HOLD_S * 1000 - 3000);
    const status = await burst.status();
    const cpuAfter = await processCpuMs(server.pid!);
    const held = await retransmittedConnections(port);
    rounds.push({
      round,
      at: Math.round(sentAt - probes.origin),
      openMs: Math.round(openedAt - sentAt),
      sockets: status.sockets,
      connected: status.connectMs.length,
      // As the burst's process saw it: a connect its own busy event loop noticed late counts too.
      connectedAfterOneSecond: status.connectMs.filter((ms) => ms >= 1000).length,
      // The kernel's record, for the connections still open: a SYN sent again.
      stillOpen: held?.connections ?? -1,
      synRetransmitted: held?.retransmitted ?? -1,
      closedByServer: status.closed,
      // What taking in the burst (and serving the probes meanwhile) cost the server: a caller
      // queued behind the burst waits for this much CPU, stretched by whatever else runs.
      serverCpuMs: cpuBefore !== null && cpuAfter !== null ? cpuAfter - cpuBefore : -1,
    });
    await burst.end();
    await sleep(2000);
  }
  await probes.stop();
  const after = await listenOverflows();
  clientDelay.disable();

  const byPath = (results: ProbeResult[], path: string) => results.filter((result) => result.path === path);
  const amid = withBurst.filter((result) => result.amid);
  const report = {
    healthz: summarize(byPath(probes.results, '/healthz')),
    mars: summarize(byPath(probes.results, '/context/mars')),
    // Sent while the burst's connections were being opened: one the cap closes unread fails at once (status 0).
    amidBurstHealthz: summarize(byPath(amid, '/healthz')),
    amidBurstMars: summarize(byPath(amid, '/context/mars')),
    // Sent in the second after the last of them: queued behind the whole burst.
    afterBurstHealthz: summarize(byPath(withBurst.filter((result) => !result.amid), '/healthz')),
    afterBurstMars: summarize(byPath(withBurst.filter((result) => !result.amid), '/context/mars')),
    slowest: [...probes.results]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 6)
      .map((result) => ({ path: result.path, status: result.status, ms: Math.round(result.ms), at: Math.round(result.sentAt - probes.origin) })),
    listenOverflows: before && after ? { overflows: after.overflows - before.overflows, drops: after.drops - before.drops } : null,
    maxAcceptQueue: maxQueued,
    rounds,
    clientEventLoopDelayMaxMs: Math.round(clientDelay.max / 1e6),
  };
  console.info(JSON.stringify(report, null, 2));
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  await rm(traceDir, { recursive: true, force: true });
}

await main();
