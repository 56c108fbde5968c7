import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { PROJECT_ROOT } from '../../src/config.js';

/** A failure the harness explains in one message (bad settings, a server that will not start). */
export class BenchError extends Error {
  override readonly name = 'BenchError';
}

// Every child process is registered so an exit, a signal or a crash kills it, and every
// temporary thing (a trace directory, a database cluster, a churned brain file) registers
// how to undo it.
const children = new Set<ChildProcess>();
const cleanups = new Set<() => Promise<unknown>>();
/** The load running now, stopped on a signal. */
export const running: { load: { stop(): void } | undefined } = { load: undefined };

/** Registers `undo` to run on a signal, a failure or `cleanUp()`; the returned function unregisters it. */
export function onCleanUp(undo: () => Promise<unknown>): () => void {
  cleanups.add(undo);
  return () => void cleanups.delete(undo);
}

/** Kills every child still running and runs every registered undo (each once). */
export async function cleanUp(): Promise<void> {
  for (const child of children) child.kill('SIGKILL');
  const pending = [...cleanups];
  cleanups.clear();
  await Promise.all(pending.map((undo) => undo().catch(() => undefined)));
}

/** Makes an exit kill every child still running, and SIGINT or SIGTERM stop the load and clean up before exiting. */
export function cleanUpOnExit(): void {
  process.on('exit', () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      process.stderr.write(`\nbench: ${signal}, stopping the servers\n`);
      running.load?.stop();
      void cleanUp().finally(() => process.exit(130));
    });
  }
}

export interface Spawned {
  child: ChildProcess;
  pid: number;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last 16 KiB the process wrote (warnings and errors only at LOG_LEVEL=warn). */
  tail(): string;
  logLines(): number;
}

export function spawnNode(script: string, args: string[], env: Record<string, string>, nodeArgs: string[] = []): Spawned {
  const child = spawn(process.execPath, [...nodeArgs, script, ...args], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let tail = '';
  let lines = 0;
  const keep = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    lines += text.split('\n').length - 1;
    tail = (tail + text).slice(-16_384);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = once(child, 'exit').then(([code, signal]) => {
    children.delete(child);
    return { code: code as number | null, signal: signal as NodeJS.Signals | null };
  });
  if (child.pid === undefined) throw new Error(`could not start ${script}`);
  return { child, pid: child.pid, exited, tail: () => tail, logLines: () => lines };
}

export async function stopChild(spawned: Spawned, graceMs: number) {
  if (spawned.child.exitCode !== null || spawned.child.signalCode !== null) return { ...(await spawned.exited), ms: 0 };
  const started = performance.now();
  spawned.child.kill('SIGTERM');
  const timer = setTimeout(() => spawned.child.kill('SIGKILL'), graceMs);
  const result = await spawned.exited;
  clearTimeout(timer);
  return { ...result, ms: Math.round(performance.now() - started) };
}

/** Throws, with its output, when `spawned` has exited while `doing`. */
export function assertRunning(spawned: Spawned, doing: string): void {
  if (spawned.child.exitCode !== null || spawned.child.signalCode !== null) {
    throw new BenchError(`the server exited during ${doing} (code ${spawned.child.exitCode}, signal ${spawned.child.signalCode}); output:\n${spawned.tail()}`);
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolveConnect) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolveConnect(true);
    });
    socket.once('error', () => resolveConnect(false));
  });
}

/** Polls until the port accepts a connection; returns performance.now() at that moment. */
export async function waitForPort(port: number, spawned: Spawned, timeoutMs: number): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    if (await canConnect(port)) return performance.now();
    if (spawned.child.exitCode !== null) break;
    await sleep(2);
  }
  throw new BenchError(`server did not listen on ${port} within ${timeoutMs} ms; output:\n${spawned.tail()}`);
}

export async function waitForLine(spawned: Spawned, pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray> {
  const deadline = performance.now() + timeoutMs;
  while (performance.now() < deadline) {
    const match = pattern.exec(spawned.tail());
    if (match) return match;
    if (spawned.child.exitCode !== null) break;
    await sleep(10);
  }
  throw new BenchError(`no ${pattern} from child within ${timeoutMs} ms; output:\n${spawned.tail()}`);
}
