import { realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { fmt, out } from '../lib/format.js';
import type { RouteKey } from '../lib/knobs.js';
import { dirUsage } from '../lib/machine.js';
import { BenchError } from '../lib/processes.js';
import { leanTarget, problemSummary, send, type Sent, type Target } from '../lib/requests.js';
import type { Bench } from '../lib/servers.js';

/** What the durable same-body route of a persona repeats before it answers. */
export interface DurableWork {
  /** Brain paths `lstat`ed per request: every directory and file on the way to what the answer relied on. */
  paths: string[];
  /** Bytes one request at the fixed minute adds to the trace store once its shared records are written. */
  eventBytes: number;
  /** How many requests `eventBytes` is the mean of. */
  sampled: number;
}

/** A persona's body, by route and view: `mars` (the full answer) or `mars-session` (the lean connect answer, `?view=session`). */
export type BodyName = RouteKey | `${RouteKey}-session`;

export function bodyName(route: RouteKey, view?: 'session'): BodyName {
  return view === undefined ? route : `${route}-${view}`;
}

export interface Preflight {
  /** Each route's one answer (and each persona's lean one): its status, size and, for a problem, its code and detail. */
  answers: Record<string, { status: number; bytes: number; contentEncoding?: string; problem?: string }>;
  /** Per persona body (full and lean): the bare server answering its bytes, and its durable same-body route. */
  same: Map<BodyName, Target>;
  durable: Map<BodyName, Target>;
  work: Partial<Record<BodyName, DurableWork>>;
}

/** Gives the bare server the bytes a route answered, to answer them itself at `/same/<route>`. */
async function registerSameBytes(bareBase: string, route: BodyName, answer: Sent): Promise<void> {
  const response = await request(`${bareBase}/same/${route}`, {
    method: 'PUT',
    headers: {
      'content-type': 'application/octet-stream',
      'x-serve-content-type': answer.contentType ?? 'application/json; charset=utf-8',
      ...(answer.contentEncoding ? { 'x-serve-content-encoding': answer.contentEncoding } : {}),
    },
    body: answer.raw,
  });
  await response.body.dump();
  if (response.statusCode !== 204) throw new BenchError(`the bare server refused the ${route} body (${response.statusCode})`);
}

/**
 * What the service did for one answer, read back from its trace: the paths of its sources,
 * of the paths it found missing and of the directories it listed, each with every directory
 * on the way (what a revalidation `lstat`s: the brain reader's lookups); and the bytes an
 * event of the route adds to the trace store, measured over `samples` more requests at the
 * fixed minute (the first wrote the shared records every later event refers to).
 */
async function durableWork(bench: Bench, target: Target, runId: string, samples: number): Promise<DurableWork> {
  const response = await request(`${bench.server.base}/runs/${encodeURIComponent(runId)}/trace`, { headers: { authorization: `Bearer ${bench.token}` }, headersTimeout: 10_000, bodyTimeout: 10_000 });
  const text = await response.body.text();
  if (response.statusCode !== 200) throw new BenchError(`the trace of the ${target.label} preflight answered ${response.statusCode} ${problemSummary(text) ?? ''}`);
  const trace = JSON.parse(text) as { events: Array<{ sources?: Array<{ path: string }>; absent?: Array<{ path: string }>; listings?: Array<{ path: string }> }> };
  const event = trace.events[trace.events.length - 1];
  if (!event) throw new BenchError(`the trace of the ${target.label} preflight holds no event`);
  const relied = [...(event.sources ?? []), ...(event.absent ?? []), ...(event.listings ?? [])].map((item) => item.path);
  const paths = new Set<string>();
  for (const path of relied) {
    const names = path.split('/');
    for (let i = 1; i <= names.length; i++) paths.add(names.slice(0, i).join('/'));
  }
  const before = await dirUsage(bench.traceDir);
  for (let i = 0; i < samples; i++) {
    const sent = await send(target);
    if (sent.status !== 200) throw new BenchError(`${target.label} answered ${sent.status} while its event size was measured`);
  }
  const after = await dirUsage(bench.traceDir);
  const root = await realpath(bench.brain.dir);
  return { paths: [...paths].sort().map((path) => join(root, path)), eventBytes: Math.round((after.bytes - before.bytes) / samples), sampled: samples };
}

/** Gives the bare server what its durable route for `route` repeats (its body is the same-bytes route's). */
async function registerDurable(bareBase: string, route: BodyName, work: DurableWork): Promise<void> {
  const response = await request(`${bareBase}/durable/${route}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ paths: work.paths, eventBytes: work.eventBytes }),
  });
  await response.body.dump();
  if (response.statusCode !== 204) throw new BenchError(`the bare server refused the ${route} durable route (${response.statusCode})`);
}

/**
 * One request per route; a non-2xx prints its problem. A persona's answer at the fixed
 * minute becomes the body of its same-bytes bare route, byte for byte (compressed as it
 * arrived, if it was), and of its durable same-body route; so does its lean connect answer
 * (`?view=session`), each beside the durable route for its own body.
 */
export async function preflight(bench: Bench): Promise<Preflight> {
  const result: Preflight = { answers: {}, same: new Map(), durable: new Map(), work: {} };
  for (const routeTarget of bench.targets) {
    for (const target of routeTarget.personaTargets ? [routeTarget, leanTarget(routeTarget)] : [routeTarget]) {
      const answered = await answer(target);
      const route = target.key as RouteKey;
      const name = bodyName(route, target.view);
      result.answers[name] = answered.summary;
      if (!target.personaTargets || answered.sent.status !== 200) continue;
      await registerBody(bench, target, name, answered.sent, result);
    }
  }
  return result;
}

/** One request of `target`, printed. */
async function answer(target: Target): Promise<{ sent: Sent; summary: Preflight['answers'][string] }> {
  const response = await send(target);
  const problem = response.status >= 300 ? problemSummary(response.body) : undefined;
  out(`preflight ${target.label}: ${response.status}, ${response.bytes} bytes${response.contentEncoding ? ` (${response.contentEncoding})` : ''}${problem ? ` — ${problem}` : ''}`);
  return {
    sent: response,
    summary: {
      status: response.status,
      bytes: response.bytes,
      ...(response.contentEncoding ? { contentEncoding: response.contentEncoding } : {}),
      ...(problem ? { problem } : {}),
    },
  };
}

/** Registers a persona body `name` (answered by `target`) with the bare server: its same-bytes route and its durable same-body route. */
async function registerBody(bench: Bench, target: Target, name: BodyName, response: Sent, result: Preflight): Promise<void> {
  const headers: Record<string, string> = bench.encoding === undefined ? {} : { 'accept-encoding': bench.encoding };
  const route = target.key as RouteKey;
  const view = target.view === undefined ? {} : { view: target.view };
  await registerSameBytes(bench.bare.base, name, response);
  result.same.set(name, {
    key: 'same',
    route,
    ...view,
    label: `  bare Fastify (the ${fmt.bytes(response.bytes)} of ${name})`,
    method: 'GET',
    url: `${bench.bare.base}/same/${name}`,
    headers,
    personaTargets: false,
  });
  if (response.runId === undefined) throw new BenchError(`${target.label} answered without an x-run-id`);
  const work = await durableWork(bench, target, response.runId, 32);
  result.work[name] = work;
  await registerDurable(bench.bare.base, name, work);
  out(`  durable same-body route for ${name}: ${work.paths.length} lstats, a ${fmt.bytes(work.eventBytes)} event (mean of ${work.sampled} fixed-minute events)`);
  result.durable.set(name, {
    key: 'durable',
    route,
    ...view,
    label: `  durable same-body (${work.paths.length} lstats, ${fmt.bytes(work.eventBytes)} event, group commit)`,
    method: 'GET',
    url: `${bench.bare.base}/durable/${name}`,
    headers,
    personaTargets: false,
  });
}
