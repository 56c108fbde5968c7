/**
 * Shared pieces of the adversarial suite (test/security/): problem assertions, a hostile
 * brain whose links point at a secret outside it, and a way to gather everything the
 * service wrote (responses, traces on disk and over HTTP, logs) to search for leaks.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { copyExampleBrain, tempDir } from './app.js';

export const PROBLEM_TYPE = /^application\/problem\+json/;
export const NOW = '2026-11-30T17:20:00Z';

/**
 * A request not answered by then hangs: a busy machine answers these in well under a second,
 * and a hang is forever (the test's own timeout is 60 s).
 */
const HANG_MS = 30_000;

/** One request that must be answered (a hang fails), with a 2xx/304 or a 4xx problem. */
export async function answered(app: FastifyInstance, options: InjectOptions): Promise<LightMyRequestResponse> {
  let timer: NodeJS.Timeout | undefined;
  const response = await Promise.race([
    app.inject(options),
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${HANG_MS} ms: ${JSON.stringify(options).slice(0, 300)}`)), HANG_MS))),
  ]).finally(() => clearTimeout(timer));
  const label = `${JSON.stringify(options).slice(0, 300)} -> ${response.statusCode} ${response.body.slice(0, 300)}`;
  expect(response.statusCode, label).toBeLessThan(500);
  if (response.statusCode >= 400) {
    expect(response.headers['content-type'], label).toMatch(PROBLEM_TYPE);
    expect(response.json().status, label).toBe(response.statusCode);
  } else {
    expect([200, 304], label).toContain(response.statusCode);
  }
  return response;
}

/** A valid `POST /compile` turn for the example brain's scribe worker. */
export function turn(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { phase: 'turn', surface: 'chat', worker: 'scribe', channelId: 'general', message: 'Please tighten the sign-off.', now: NOW, ...overrides };
}

/** Asserts an RFC 9457 problem whose status is one of `statuses` (and matches the body). */
export function expectProblem(response: LightMyRequestResponse, statuses: readonly number[], label = ''): Record<string, unknown> {
  expect(statuses, `${label}: status ${response.statusCode} ${response.body.slice(0, 300)}`).toContain(response.statusCode);
  expect(response.headers['content-type'], label).toMatch(PROBLEM_TYPE);
  const body = response.json() as Record<string, unknown>;
  expect(body['status'], label).toBe(response.statusCode);
  expect(body['code'], label).toMatch(/^CC_[A-Z_]+$/);
  expect(body['type'], label).toMatch(/^urn:context-compiler:problem:/);
  expect(JSON.stringify(body), label).not.toMatch(/\bat .+:\d+:\d+\)|node_modules|\/work\//);
  return body;
}

export interface HostileBrain {
  root: string;
  /** A directory outside the brain holding the secret. */
  outside: string;
  /** Text that exists only outside the brain: it must never appear anywhere the service writes. */
  secret: string;
}

/**
 * A copy of the example brain in which files the service reads are links to a secret
 * outside it: a file link, a linked directory, a link chain, a relative `../` link, and
 * links in every place a route reads (identity, purpose, memory notes, heartbeat, topics,
 * persona overrides, SOUL.md).
 */
export async function hostileBrain(): Promise<HostileBrain> {
  const root = await copyExampleBrain();
  const outside = await tempDir('cc-outside-');
  const secret = `SECRET-${randomBytes(12).toString('hex')}`;
  const secretFile = join(outside, 'secret.md');
  await writeFile(secretFile, `You are the leaked worker. ${secret}\n`);
  await mkdir(join(outside, 'worker'), { recursive: true });
  await writeFile(join(outside, 'worker', 'identity.md'), `Linked directory. ${secret}\n`);
  await writeFile(join(outside, 'heartbeat.json'), JSON.stringify({ currentLocation: { timezone: 'Europe/London' }, secret }));

  const link = async (target: string, path: string) => {
    await mkdir(join(root, path, '..'), { recursive: true });
    await rm(join(root, path), { recursive: true, force: true });
    await symlink(target, join(root, path));
  };
  await link(secretFile, 'workers/evil/identity.md');
  await link(join(outside, 'worker'), 'workers/evil-dir');
  // A chain: inside -> inside -> outside.
  await link(join(root, 'workers/chain-b/identity.md'), 'workers/chain/identity.md');
  await link(secretFile, 'workers/chain-b/identity.md');
  // Relative, climbing out of the root.
  await link('../../../../../../../../../..' + secretFile, 'workers/relative/identity.md');
  await link(secretFile, 'workers/scribe/memory/leak.md');
  await link(secretFile, 'channels/evil/purpose.md');
  await link(secretFile, 'topics/evil.md');
  await link(secretFile, 'personas/mars.md');
  await link(secretFile, 'SOUL.md');
  await link(join(outside, 'heartbeat.json'), 'memory/heartbeat-state.json');
  return { root, outside, secret };
}

/** Every file under `dir`, concatenated (the trace store's files on disk). */
export async function readTree(dir: string): Promise<string> {
  let text = '';
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (entry.isFile()) text += await readFile(join(entry.parentPath, entry.name), 'utf8');
  }
  return text;
}

/** Every run the trace store lists, each read back whole over HTTP (with `?verify=sources`). */
export async function readAllTraces(app: FastifyInstance, headers: Record<string, string> = {}): Promise<string> {
  let text = '';
  let cursor: string | null = null;
  do {
    const page: LightMyRequestResponse = await app.inject({ url: `/runs?limit=100${cursor ? `&cursor=${cursor}` : ''}`, headers });
    expect(page.statusCode).toBe(200);
    text += page.body;
    const body = page.json() as { runs: Array<{ runId: string }>; nextCursor: string | null };
    for (const run of body.runs) {
      const trace = await app.inject({ url: `/runs/${run.runId}/trace?verify=sources`, headers });
      expect(trace.statusCode).toBe(200);
      text += trace.body;
    }
    cursor = body.nextCursor;
  } while (cursor);
  return text;
}
