/**
 * A connection burst against a listening server, and probes that time fresh connections while
 * it lasts (issue 25 item 3): what `bench/burst.ts` reports on the real server and what
 * `test/security/connection-burst.test.ts` holds.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { Client } from 'undici';

export interface BurstShape {
  /** Sockets that connect and never send a byte. */
  idle: number;
  /** Slowloris: half a request head, then one more header line every `dripMs`. */
  headerDrips: number;
  /** A complete `POST /compile` head, then one byte of its body every `dripMs`. */
  bodyDrips: number;
  dripMs: number;
  /** Bearer token the body drips send, so their head is accepted and the body is awaited. */
  token?: string;
}

export interface Burst {
  /** Every socket of the burst, opened in one go. */
  sockets: Socket[];
  /**
   * Each connected socket's time to connect, from its own `connect()` call, as this process
   * saw it: a busy event loop here adds to it (the kernel's record: `retransmittedConnections`).
   */
  connectMs: number[];
  /** Sockets the server closed or reset so far. */
  closed(): number;
  /** Destroys every socket and stops the drips. */
  end(): void;
}

/**
 * Opens every socket of the burst at once (one synchronous loop, kinds interleaved), the way
 * a reconnect storm or a flood arrives: the listen queue sees them all within milliseconds.
 */
export function openBurst(port: number, shape: BurstShape): Burst {
  // Interleaved in proportion (the j-th of n of a kind sits at (j + 0.5) / n), so eviction at
  // the cap sees every kind arrive throughout.
  const kinds = (
    [
      ['idle', shape.idle],
      ['head', shape.headerDrips],
      ['body', shape.bodyDrips],
    ] as const
  )
    .flatMap(([kind, n]) => Array.from({ length: n }, (_, j) => ({ kind, key: (j + 0.5) / n })))
    .sort((a, b) => a.key - b.key)
    .map(({ kind }) => kind);
  const sockets: Socket[] = [];
  const connectMs: number[] = [];
  /** Drips still sending, and what each sends. */
  const dripping = new Map<Socket, 'head' | 'body'>();
  let closed = 0;
  for (const kind of kinds) {
    const issued = performance.now();
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.on('data', () => undefined);
    socket.once('close', () => {
      closed++;
      dripping.delete(socket);
    });
    socket.once('connect', () => {
      connectMs.push(performance.now() - issued);
      if (kind === 'head') {
        socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n');
        dripping.set(socket, kind);
      } else if (kind === 'body') {
        const auth = shape.token ? `Authorization: Bearer ${shape.token}\r\n` : '';
        socket.write(`POST /compile HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Type: application/json\r\nContent-Length: 65536\r\n\r\n{`);
        dripping.set(socket, kind);
      }
    });
    sockets.push(socket);
  }
  let drops = 0;
  const drip = setInterval(() => {
    drops++;
    // A header line for a head still being sent; a space inside the JSON body for a body.
    for (const [socket, kind] of dripping) socket.write(kind === 'head' ? `X-Drip-${drops}: a\r\n` : ' ');
  }, shape.dripMs);
  return {
    sockets,
    connectMs,
    closed: () => closed,
    end() {
      clearInterval(drip);
      for (const socket of sockets) socket.destroy();
    },
  };
}

export interface BurstStatus {
  sockets: number;
  /** Each connected socket's time to connect (see `Burst`). */
  connectMs: number[];
  /** Sockets the server closed or reset so far. */
  closed: number;
}

export interface BurstProcess {
  /**
   * Opens the burst; resolves once every one of its connects was issued (its SYNs sent):
   * with `sentAt`, when it was asked to, and `openedAt`, when it said so, on this process's
   * `performance.now()` clock. A connection made after `openedAt` arrived after the whole burst.
   */
  open(): Promise<{ sentAt: number; openedAt: number }>;
  status(): Promise<BurstStatus>;
  /** Closes every socket of the burst; resolves when its process has exited. */
  end(): Promise<void>;
}

/**
 * A process of its own (bench/burst-client.ts) that opens the burst when told, under
 * `ulimit -n openFiles` when given: the prober's event loop then times the probes, not the
 * opening of thousands of sockets. Resolves once that process is ready.
 */
export async function forkBurst(port: number, shape: BurstShape, options: { openFiles?: number } = {}): Promise<BurstProcess> {
  const here = fileURLToPath(import.meta.url);
  // Run from dist/bench/ it is plain JavaScript; from bench/ (vitest, tsx) it needs tsx.
  const typescript = here.endsWith('.ts');
  const entry = here.replace(/connection-burst\.(ts|js)$/, `burst-client.$1`);
  const node = [process.execPath, ...(typescript ? ['--import', 'tsx'] : []), entry, String(port), JSON.stringify(shape)];
  const child =
    options.openFiles === undefined
      ? spawn(node[0]!, node.slice(1), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
      : spawn('sh', ['-c', `ulimit -n ${options.openFiles} && exec "$0" "$@"`, ...node], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = once(child, 'exit');
  const next = (type: string) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const onMessage = (message: Record<string, unknown>) => {
        if (message['type'] !== type) return;
        child.off('message', onMessage);
        resolve(message);
      };
      child.on('message', onMessage);
      void exited.then(([code]) => reject(new Error(`the burst process exited (${String(code)}) before it sent ${type}`)));
    });
  await next('ready');
  return {
    async open() {
      const opened = next('opened');
      const sentAt = performance.now();
      child.send({ type: 'open' });
      await opened;
      return { sentAt, openedAt: performance.now() };
    },
    async status() {
      const answer = next('status');
      child.send({ type: 'status' });
      const { sockets, connectMs, closed } = (await answer) as unknown as BurstStatus;
      return { sockets, connectMs, closed };
    },
    async end() {
      if (child.exitCode === null && child.connected) child.send({ type: 'end' });
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export interface ProbeResult {
  path: string;
  /** When it was sent, on this process's `performance.now()` clock. */
  sentAt: number;
  /** HTTP status; 0 when the request failed without an answer. */
  status: number;
  ms: number;
  error?: string;
}

export interface Probes {
  results: ProbeResult[];
  /** When the probes started (`performance.now()`). */
  origin: number;
  /** Stops sending; resolves once the probes in flight have settled. */
  stop(): Promise<void>;
}

/**
 * Every `everyMs`, one GET of `path` on a fresh connection (a new client per probe, as a
 * Kubernetes probe or a load balancer health check connects), timed from the call to the
 * end of the answer's body.
 */
export function probeEvery(port: number, schedule: Array<{ path: string; everyMs: number; headers?: Record<string, string> }>, timeoutMs = 10_000): Probes {
  const results: ProbeResult[] = [];
  const inFlight = new Set<Promise<void>>();
  const origin = performance.now();
  const timers = schedule.map(({ path, everyMs, headers }) =>
    setInterval(() => {
      const sentAt = performance.now();
      const sent: Promise<void> = probeOnce(port, path, headers ?? {}, timeoutMs).then((result) => {
        results.push({ ...result, sentAt });
        inFlight.delete(sent);
      });
      inFlight.add(sent);
    }, everyMs),
  );
  return {
    results,
    origin,
    async stop() {
      for (const timer of timers) clearInterval(timer);
      await Promise.all([...inFlight]);
    },
  };
}

async function probeOnce(port: number, path: string, headers: Record<string, string>, timeoutMs: number): Promise<Omit<ProbeResult, 'sentAt'>> {
  const client = new Client(`http://127.0.0.1:${port}`, { connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, pipelining: 0 });
  const started = performance.now();
  try {
    const response = await client.request({ method: 'GET', path, headers });
    await response.body.dump();
    return { path, status: response.statusCode, ms: performance.now() - started };
  } catch (error) {
    return { path, status: 0, error: (error as NodeJS.ErrnoException).code ?? (error as Error).message, ms: performance.now() - started };
  } finally {
    await client.destroy();
  }
}

export interface LatencySummary {
  count: number;
  p50: number;
  p99: number;
  max: number;
  /** Answers that took a second or more: a SYN retransmit, or a probe's default timeout. */
  overOneSecond: number;
  failed: number;
  statuses: Record<string, number>;
}

export function summarize(results: ProbeResult[]): LatencySummary {
  const ms = results.map((result) => result.ms).sort((a, b) => a - b);
  const at = (q: number) => (ms.length === 0 ? 0 : round(ms[Math.min(ms.length - 1, Math.ceil(q * ms.length) - 1)]!));
  const statuses: Record<string, number> = {};
  for (const result of results) statuses[result.status] = (statuses[result.status] ?? 0) + 1;
  return {
    count: ms.length,
    p50: at(0.5),
    p99: at(0.99),
    max: round(ms.at(-1) ?? 0),
    overOneSecond: ms.filter((each) => each >= 1000).length,
    failed: results.filter((result) => result.status === 0).length,
    statuses,
  };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/**
 * The kernel's count of connections it refused because a listen queue was full
 * (`TcpExtListenOverflows`, `TcpExtListenDrops` in /proc/net/netstat, as `nstat` shows them):
 * for this network namespace, every listener. Null where /proc is missing.
 */
export async function listenOverflows(): Promise<{ overflows: number; drops: number } | null> {
  let text: string;
  try {
    text = await readFile('/proc/net/netstat', 'utf8');
  } catch {
    return null;
  }
  const lines = text.split('\n').filter((line) => line.startsWith('TcpExt:'));
  if (lines.length < 2) return null;
  const names = lines[0]!.split(/\s+/);
  const values = lines[1]!.split(/\s+/);
  const value = (name: string) => Number(values[names.indexOf(name)] ?? Number.NaN);
  return { overflows: value('ListenOverflows'), drops: value('ListenDrops') };
}

/**
 * The listening socket's accept queue as `ss -ltn` shows it: `queued` (Recv-Q, connections
 * the kernel completed that the process has not accepted yet) and `backlog` (Send-Q, the
 * queue's size: the listen backlog capped by `net.core.somaxconn`). Null without `ss`.
 */
export function acceptQueue(port: number): Promise<{ queued: number; backlog: number } | null> {
  return new Promise((resolve) => {
    execFile('ss', ['-ltnH', `sport = :${port}`], { timeout: 2000 }, (error, stdout) => {
      const fields = error ? undefined : stdout.trim().split('\n')[0]?.trim().split(/\s+/);
      if (!fields || fields.length < 3) return resolve(null);
      resolve({ queued: Number(fields[1]), backlog: Number(fields[2]) });
    });
  });
}

/**
 * Connections to `port` held now, and how many of them the kernel had to send a segment of
 * again — on loopback, a SYN dropped at a full listen queue — as `ss -ti` reads each socket's
 * TCP_INFO (`retrans:<now>/<total>`): the kernel's own record, however late the client's
 * event loop saw the connect. Null without `ss` (iproute2).
 */
export function retransmittedConnections(port: number): Promise<{ connections: number; retransmitted: number } | null> {
  return new Promise((resolve) => {
    execFile('ss', ['-tinH', `( dport = :${port} )`], { timeout: 10_000, maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => {
      if (error) return resolve(null);
      let connections = 0;
      let retransmitted = 0;
      for (const line of stdout.split('\n')) {
        if (/^\S/.test(line)) connections++;
        const total = /\bretrans:\d+\/(\d+)/.exec(line)?.[1];
        if (total !== undefined && Number(total) > 0) retransmitted++;
      }
      resolve({ connections, retransmitted });
    });
  });
}

/** CPU time (user and system) a process has used, in ms, from /proc; null where it cannot be read. */
export async function processCpuMs(pid: number): Promise<number | null> {
  try {
    const text = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15, in ticks of 10 ms.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}
