import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { refuseWhileShuttingDown, type ShutdownState } from './shutdown.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The listening server's sockets: the MAX_CONNECTIONS cap, and which to close when shutting down. */
    connections: ConnectionGuard;
  }
}

/** Why the guard closed a connection the client did not close: to admit a newcomer, or because every one was busy. */
export type ShedReason = 'evicted' | 'refused';

export interface ConnectionGuardOptions {
  /** At most this many sockets are open at once (`server.maxConnections`). */
  maxConnections: number;
  /** A new socket that sends nothing for this long is closed (it has no request to wait for). */
  firstRequestTimeoutMs: number;
  log: FastifyBaseLogger;
  onShed?: (reason: ShedReason) => void;
}

export interface ConnectionGuard {
  /** Open sockets, and how many of them have a request in flight. */
  stats(): { open: number; inFlight: number };
  /**
   * Sets the shutdown flag (every request is then answered 503 `CC_SHUTTING_DOWN`), closes
   * every socket without a request in flight (idle, or still sending its head) at once,
   * closes each other one as soon as its last answer is written, and refuses new ones.
   * Idempotent; returns what it closed and what is left in flight.
   */
  beginShutdown(): { closed: number; inFlight: number };
  /** Closes every socket, requests in flight included (the end of the shutdown grace); returns how many had one. */
  closeAll(): number;
}

const kInFlight = Symbol('requestsInFlight');
type TrackedSocket = Socket & { [kInFlight]?: number };

/** How often a shed connection may be logged (the metric counts every one). */
const SHED_LOG_INTERVAL_MS = 10_000;

/**
 * Keeps a flood of sockets that send nothing, or drip, from starving real callers: the open
 * sockets are capped below the process's file-descriptor limit, and when the cap is reached
 * the socket that has waited longest without sending a complete request is closed so the
 * newcomer gets in — sockets that never sent a request first (oldest connection first), then
 * idle keep-alive ones (longest idle first). Only when every socket has a request in flight
 * is a newcomer refused (`server.maxConnections`).
 *
 * The per-request cost is a set operation, a counter and a `close` listener on the response.
 */
function guardConnections(server: Server, options: ConnectionGuardOptions, state: ShutdownState): ConnectionGuard {
  const all = new Set<TrackedSocket>();
  /** Connected, no complete request head yet: oldest first. */
  const fresh = new Set<TrackedSocket>();
  /** Answered, waiting for the next request: longest idle first. */
  const idle = new Set<TrackedSocket>();
  const shed = { evicted: 0, refused: 0, loggedAt: 0 };

  // The newest socket always fits: the oldest waiting one makes room before the cap is reached.
  server.maxConnections = options.maxConnections;

  function forget(this: TrackedSocket): void {
    all.delete(this);
    fresh.delete(this);
    idle.delete(this);
  }

  function close(socket: TrackedSocket): void {
    forget.call(socket);
    socket.destroy();
  }

  function noteShed(reason: ShedReason): void {
    shed[reason]++;
    options.onShed?.(reason);
    const now = Date.now();
    if (now - shed.loggedAt < SHED_LOG_INTERVAL_MS) return;
    shed.loggedAt = now;
    options.log.warn(
      { maxConnections: options.maxConnections, evicted: shed.evicted, refused: shed.refused },
      'connection cap reached: closing waiting connections for newcomers (counts since start)',
    );
  }

  server.on('connection', (socket: TrackedSocket) => {
    if (state.shuttingDown) {
      socket.destroy();
      return;
    }
    all.add(socket);
    fresh.add(socket);
    socket.once('close', forget);
    // Node applied server.timeout (the in-flight bound); until its first request, a socket gets less.
    socket.setTimeout(options.firstRequestTimeoutMs);
    if (all.size < options.maxConnections) return;
    const oldest = first(fresh, socket) ?? first(idle, socket);
    if (oldest) {
      close(oldest);
      noteShed('evicted');
    }
  });

  server.on('drop', () => noteShed('refused'));

  function settled(this: ServerResponse): void {
    const socket = this.req.socket as TrackedSocket;
    const left = (socket[kInFlight] = (socket[kInFlight] ?? 1) - 1);
    if (left > 0 || socket.destroyed || !all.has(socket)) return;
    if (state.shuttingDown) {
      forget.call(socket);
      socket.destroySoon();
    } else idle.add(socket);
  }

  server.prependListener('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket as TrackedSocket;
    if (fresh.delete(socket)) socket.setTimeout(server.timeout);
    else idle.delete(socket);
    socket[kInFlight] = (socket[kInFlight] ?? 0) + 1;
    response.once('close', settled);
  });

  return {
    stats: () => ({ open: all.size, inFlight: all.size - fresh.size - idle.size }),
    beginShutdown() {
      // Answers in flight keep their keep-alive headers: a request pipelined behind one still gets
      // its own answer (a 503), and the socket closes once the last is written.
      state.shuttingDown = true;
      let closed = 0;
      for (const waiting of [fresh, idle]) {
        for (const socket of [...waiting]) {
          close(socket);
          closed++;
        }
      }
      return { closed, inFlight: all.size };
    },
    closeAll() {
      const inFlight = all.size - fresh.size - idle.size;
      for (const socket of [...all]) close(socket);
      return inFlight;
    },
  };
}

function first<T>(set: Set<T>, except: T): T | undefined {
  for (const item of set) if (item !== except) return item;
  return undefined;
}

/**
 * `app.connections` (the guard above on the app's server), and the shutdown it drives: from
 * `beginShutdown` (SIGTERM, or `app.close()` alone) every request is answered 503
 * `CC_SHUTTING_DOWN` with `Connection: close`, so a pipelined caller retries elsewhere.
 */
export const connectionsPlugin = fp(
  async function connectionsPlugin(app: FastifyInstance, options: { maxConnections: number; headersTimeoutMs: number }) {
    const state: ShutdownState = { shuttingDown: false };
    const connections = guardConnections(
      app.server,
      {
        maxConnections: options.maxConnections,
        firstRequestTimeoutMs: options.headersTimeoutMs,
        log: app.log.child({ component: 'connections' }),
        onShed: (reason) => app.metrics.connectionsShed.inc({ reason }),
      },
      state,
    );
    app.decorate('connections', connections);
    // app.close() alone (tests, an embedding host) sheds waiting sockets as SIGTERM does.
    app.addHook('preClose', (done) => {
      connections.beginShutdown();
      done();
    });
    app.addHook('onRequest', refuseWhileShuttingDown(state));
  },
  { name: 'connections', dependencies: ['metrics', 'auth'] },
);
