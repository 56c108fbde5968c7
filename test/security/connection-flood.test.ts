import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'undici';
import { describe, expect, it, onTestFinished } from 'vitest';
import { tempDir, TEST_TOKEN } from '../helpers/app.js';
import { startServer, untilReady, type ServerProcess } from '../helpers/server-process.js';

const FLOOD = 1100;
/** The default MAX_CONNECTIONS (src/config.ts). */
const DEFAULT_MAX_CONNECTIONS = 768;
/**
 * How long a probe waits for its answer on a fresh connection before it counts as unanswered:
 * long enough for a busy machine, and well under HEADERS_TIMEOUT, so no server timeout can be
 * what let it through. Whether it is answered is the test, not how fast.
 */
const ANSWER_WITHIN_MS = 20_000;
/**
 * Load shedding by event-loop delay off: on a busy machine the server's loop lags past the
 * default 200 ms and it answers 503 CC_OVERLOADED, as it should; shedding has its own tests
 * (test/routes/pressure.test.ts), and the machine's load is not what this one is about.
 */
const NO_DELAY_SHEDDING = { PRESSURE_MAX_EVENT_LOOP_DELAY: '0' };
const TOO_FEW_DESCRIPTORS = /MAX_CONNECTIONS leaves too few file descriptors/;

interface Flood {
  sockets: Socket[];
  /** Sockets the server closed (or reset) so far. */
  closed(): number;
}

/**
 * Opens `count` TCP connections, 100 at a time: every other one sends half a request head and
 * stops (a drip), the rest never send a byte. Each is destroyed after the test.
 */
async function openIdleSockets(port: number, count: number): Promise<Flood> {
  const sockets: Socket[] = [];
  let closed = 0;
  for (let start = 0; start < count; start += 100) {
    const batch = Array.from({ length: Math.min(100, count - start) }, () => {
      const socket = connect(port, '127.0.0.1');
      if (sockets.length % 2 === 1) socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Drip: a');
      socket.on('error', () => undefined);
      socket.once('close', () => closed++);
      sockets.push(socket);
      return Promise.race([once(socket, 'connect'), once(socket, 'close'), new Promise((resolve) => setTimeout(resolve, 5000))]);
    });
    await Promise.all(batch);
  }
  onTestFinished(() => {
    for (const socket of sockets) socket.destroy();
  });
  return { sockets, closed: () => closed };
}

/** One GET on a new connection: its status (0 when the connection failed), error code and time to the answer. */
async function probe(port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number; error?: string; ms: number }> {
  const client = new Client(`http://127.0.0.1:${port}`, { connectTimeout: ANSWER_WITHIN_MS, headersTimeout: ANSWER_WITHIN_MS, bodyTimeout: ANSWER_WITHIN_MS });
  const started = performance.now();
  try {
    const response = await client.request({ method: 'GET', path, headers });
    await response.body.dump();
    return { status: response.statusCode, ms: performance.now() - started };
  } catch (error) {
    return { status: 0, error: (error as NodeJS.ErrnoException).code ?? (error as Error).message, ms: performance.now() - started };
  } finally {
    await client.destroy();
  }
}

async function stop(server: ServerProcess): Promise<void> {
  if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
  await server.exited;
}

describe('connection exhaustion (issue 12): idle sockets against the real server under ulimit -n 1024', () => {
  it('answers /healthz, /readyz and a compile while 1,100 sockets that send nothing or half a request head are held open', { timeout: 120_000 }, async () => {
    const server = startServer(
      {
        PORT: '0',
        TRACE_DIR: join(await tempDir('cc-flood-'), 'traces'),
        CONTEXT_COMPILER_TOKENS: TEST_TOKEN,
        ...NO_DELAY_SHEDDING,
        // The longest a request head may take: no timeout rescues the probes within this test.
        HEADERS_TIMEOUT: '30s',
      },
      { openFiles: 1024 },
    );
    onTestFinished(() => stop(server));
    const port = await server.listening();
    // Warm before the flood: this test is about idle sockets, not the start.
    await untilReady(port);

    const flood = await openIdleSockets(port, FLOOD);
    const answers = {
      healthz: await probe(port, '/healthz'),
      readyz: await probe(port, '/readyz'),
      mars: await probe(port, '/context/mars', { authorization: `Bearer ${TEST_TOKEN}` }),
    };
    // Shown in the test output: the figures the issue asks for.
    console.info(`idle flood of ${FLOOD} sockets: ${JSON.stringify(answers)}; closed by the server so far: ${flood.closed()}`);
    for (const answer of Object.values(answers)) {
      expect(answer).toMatchObject({ status: 200 });
    }
    // The server keeps at most MAX_CONNECTIONS sockets: it closed the oldest idle ones to admit the rest.
    // A hang bound, not a speed: the closing is prompt on a quiet machine, slower on a busy one.
    const deadline = Date.now() + 50_000;
    while (FLOOD - flood.closed() > DEFAULT_MAX_CONNECTIONS && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(FLOOD - flood.closed()).toBeLessThanOrEqual(DEFAULT_MAX_CONNECTIONS);
    expect(server.child.exitCode).toBeNull();
    // The default cap fits the common limit with room for brain and trace files.
    expect(server.output().stdout).not.toMatch(TOO_FEW_DESCRIPTORS);
  });

  it('warns at start when MAX_CONNECTIONS leaves too few file descriptors under the open-files limit', async () => {
    const server = startServer({ PORT: '0', TRACE_DIR: join(await tempDir('cc-flood-'), 'traces') }, { openFiles: 512 });
    onTestFinished(() => stop(server));
    await server.listening();
    expect(server.output().stdout).toMatch(TOO_FEW_DESCRIPTORS);
    expect(server.output().stdout).toMatch(/"maxConnections":768,"openFilesLimit":512/);
  });
});
