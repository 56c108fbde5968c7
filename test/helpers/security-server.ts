/**
 * Real listening servers for the adversarial suite: an in-process app on port 0 with chosen
 * timeouts, raw sockets that misbehave (slow drip, huge headers, garbage), and the real
 * server process started under a file-size limit so trace writes fail as on a full disk.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import request from 'supertest';
import { onTestFinished } from 'vitest';
import { buildApp } from '../../src/app.js';
import { createLogger } from '../../src/logger.js';
import { loadConfig, PROJECT_ROOT } from '../../src/config.js';
import { NO_DELAY_SHEDDING, tempDir } from './app.js';
import { buildDist, SERVER_ENTRY } from './build.js';

export interface ListeningApp {
  app: FastifyInstance;
  port: number;
  origin: string;
  rawLogs(): string;
}

/**
 * `buildApp` listening on 127.0.0.1:0, closed after the test. Timeouts come from `env`
 * (HEADERS_TIMEOUT, ...); `checkIntervalMs` makes Node check them more often than every second.
 * Under `NO_DELAY_SHEDDING`, as every test server.
 */
export async function listenWith(env: Record<string, string>, checkIntervalMs?: number): Promise<ListeningApp> {
  const config = loadConfig({ LOG_LEVEL: 'info', ...NO_DELAY_SHEDDING, TRACE_DIR: join(await tempDir('cc-traces-'), 'traces'), ...env });
  let logs = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      logs += String(chunk);
      done();
    },
  });
  const app = await buildApp(config, { logger: createLogger(config, stream), ...(checkIntervalMs === undefined ? {} : { connectionsCheckIntervalMs: checkIntervalMs }) });
  onTestFinished(() => app.close());
  const origin = await app.listen({ port: 0, host: '127.0.0.1' });
  return { app, port: Number(new URL(origin).port), origin, rawLogs: () => logs };
}

export interface RawConnection {
  socket: Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves when the server (or an error) closed the socket. */
  closed: Promise<void>;
  isClosed(): boolean;
}

export async function rawConnection(port: number): Promise<RawConnection> {
  const socket = connect(port, '127.0.0.1');
  onTestFinished(() => {
    socket.destroy();
  });
  let received = '';
  let closed = false;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => undefined);
  const done = once(socket, 'close').then(() => {
    closed = true;
  });
  await once(socket, 'connect');
  return { socket, received: () => received, closed: done, isClosed: () => closed };
}

/**
 * Writes `unit` every `everyMs` until the server closes the socket or `deadlineMs` passes;
 * resolves with how many units were written and whether the server closed it first.
 */
export async function drip(connection: RawConnection, unit: string, everyMs: number, deadlineMs: number): Promise<{ writes: number; closedByServer: boolean }> {
  const deadline = Date.now() + deadlineMs;
  let writes = 0;
  while (!connection.isClosed() && Date.now() < deadline) {
    if (connection.socket.writable) connection.socket.write(unit);
    writes++;
    await Promise.race([connection.closed, new Promise((resolve) => setTimeout(resolve, everyMs))]);
  }
  return { writes, closedByServer: connection.isClosed() };
}

/** The status and JSON body of the first raw HTTP response in `text`. */
export function parseRawResponse(text: string): { status: number; headers: string; body: unknown } {
  const [head = '', ...rest] = text.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  const body = rest.join('\r\n\r\n');
  let json: unknown = undefined;
  try {
    json = JSON.parse(body);
  } catch {
    json = body;
  }
  return { status, headers: head.toLowerCase(), body: json };
}

export interface RawResponse {
  status: number;
  /** Header lines, lowercased. */
  headers: Record<string, string>;
  body: string;
}

/** Every complete response in `text` (interim 1xx responses included), framed by Content-Length. */
export function parseRawResponses(text: string): RawResponse[] {
  const responses: RawResponse[] = [];
  let rest = text;
  for (let end = rest.indexOf('\r\n\r\n'); end >= 0; end = rest.indexOf('\r\n\r\n')) {
    const [statusLine = '', ...lines] = rest.slice(0, end).split('\r\n');
    const headers = Object.fromEntries(
      lines.map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
    );
    const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1] ?? 0);
    const bodyStart = Buffer.from(rest.slice(0, end + 4), 'utf8').length;
    const bytes = Buffer.from(rest, 'utf8');
    const length = status >= 200 ? Number(headers['content-length'] ?? 0) : 0;
    if (bytes.length < bodyStart + length) break;
    responses.push({ status, headers, body: bytes.subarray(bodyStart, bodyStart + length).toString('utf8') });
    rest = bytes.subarray(bodyStart + length).toString('utf8');
  }
  return responses;
}

export interface LimitedServer {
  child: ChildProcessByStdio<null, Readable, Readable>;
  port: number;
  output(): string;
}

/**
 * Starts the server (`dist/src/server.js`, built first) in a child process under `ulimit -f` (in 512-byte blocks; 0 = no
 * limit). Node ignores SIGXFSZ, so a write past the limit fails with EFBIG, as a write to a
 * full disk fails with ENOSPC. Killed after the test.
 */
export async function startLimitedServer(env: Record<string, string>, fileSizeBlocks: number): Promise<LimitedServer> {
  const limit = fileSizeBlocks > 0 ? `ulimit -f ${fileSizeBlocks} && ` : '';
  await buildDist();
  const child = spawn('sh', ['-c', `${limit}exec "$0" "$1"`, process.execPath, SERVER_ENTRY], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env['PATH'] ?? '', PORT: '0', LOG_LEVEL: 'info', ...NO_DELAY_SHEDDING, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  onTestFinished(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  // A hang bound, not a speed: a busy machine can take tens of seconds to start a server.
  const deadline = Date.now() + 100_000;
  while (Date.now() < deadline) {
    const match = /Server listening at http:\/\/127\.0\.0\.1:(\d+)/.exec(output);
    if (match) return { child, port: Number(match[1]), output: () => output };
    if (child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  child.kill('SIGKILL');
  throw new Error(`server did not start: ${output}`);
}

export interface PlainResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/**
 * One request to a listening server with its path sent byte for byte: through supertest
 * when a URL parser leaves the path as it is, else (dot segments such as `/context/..`, which
 * every WHATWG URL client resolves away) written to a raw socket.
 */
export async function exactRequest(port: number, method: 'GET' | 'POST', path: string, body?: unknown): Promise<PlainResponse> {
  const origin = `http://127.0.0.1:${port}`;
  const parsed = new URL(path, origin);
  if (parsed.pathname + parsed.search === path) {
    const call = method === 'GET' ? request(origin).get(path) : request(origin).post(path);
    const response = await (body === undefined ? call : call.set('content-type', 'application/json').send(JSON.stringify(body))).timeout(10_000);
    return { status: response.status, headers: response.headers as PlainResponse['headers'], body: response.text };
  }
  const payload = body === undefined ? '' : JSON.stringify(body);
  const connection = await rawConnection(port);
  connection.socket.write(
    `${method} ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n` +
      (body === undefined ? '\r\n' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`),
  );
  await connection.closed;
  const [answer] = parseRawResponses(connection.received());
  if (!answer) throw new Error(`${method} ${path}: no complete answer in ${JSON.stringify(connection.received().slice(0, 200))}`);
  return { status: answer.status, headers: answer.headers, body: answer.body };
}
