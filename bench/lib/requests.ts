import { performance } from 'node:perf_hooks';
import { request } from 'undici';
import type { BrainManifest } from '../generate-brain.js';
import type { RouteKey } from './knobs.js';

export type WindowKey = RouteKey | 'bare' | 'same' | 'durable' | 'minute' | 'churn' | 'workers' | 'compile-distinct' | 'mix';

/** One request the bench sends, over and over in a window. */
export interface Target {
  key: WindowKey;
  /** The route a derived window measures (a persona's new-minute, churn or same-bytes window). */
  route?: RouteKey;
  label: string;
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Whether the persona targets apply to this route. */
  personaTargets: boolean;
  /** A persona window of the lean connect answer (`?view=session`), or a bare-side window of its body; absent for the full answer. */
  view?: 'session';
}

/** `target` asking for the lean connect answer (`view=session`) instead of the full one. */
export function leanTarget(target: Target): Target {
  const url = new URL(target.url);
  url.searchParams.set('view', 'session');
  return { ...target, url: url.toString(), label: `${target.label}?view=session`, view: 'session' };
}

/** The calls a voice server and a chat host make, one per route in `routes`. */
export function buildTargets(base: string, token: string, manifest: BrainManifest, routes: RouteKey[], acceptEncoding?: string): Target[] {
  const auth = { authorization: `Bearer ${token}` };
  const voice = acceptEncoding === undefined ? auth : { ...auth, 'accept-encoding': acceptEncoding };
  // "now" pins the clock to the brain's last day, so today's and yesterday's memory exist.
  const now = `${manifest.endDate}T17:30:00Z`;
  const worker = manifest.workers.includes('scribe') ? 'scribe' : manifest.workers[0]!;
  const channelId = manifest.channels.includes('general') ? 'general' : manifest.channels[0]!;
  const all: Record<RouteKey, Target> = {
    mars: { key: 'mars', label: 'GET /context/mars', method: 'GET', url: `${base}/context/mars?now=${now}`, headers: voice, personaTargets: true },
    venus: { key: 'venus', label: 'GET /context/venus', method: 'GET', url: `${base}/context/venus?now=${now}`, headers: voice, personaTargets: true },
    topic: {
      key: 'topic',
      label: 'GET /context/topic/:id',
      method: 'GET',
      url: `${base}/context/topic/${manifest.topics.largest}`,
      headers: auth,
      personaTargets: false,
    },
    compile: {
      key: 'compile',
      label: 'POST /compile',
      method: 'POST',
      url: `${base}/compile`,
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({
        worker,
        phase: 'turn',
        surface: 'chat',
        channelId,
        now,
        message: 'Can you turn my notes from the roadmap review into three short bullet points for Jordan? Keep it plain.',
        capabilities: [
          { id: 'docs.read', description: 'Read a shared document by id.' },
          { id: 'docs.search', description: 'Search shared documents by keyword.' },
          { id: 'calendar.read', description: "Read today's calendar." },
          { id: 'notes.recall', description: 'Recall one of your memory notes by heading.' },
        ],
        briefing: [{ kind: 'approval', id: 'ap-17', intent: 'Send the roadmap summary to Jordan', state: 'pending' }],
        preferences: { length: 'concise', format: 'bullets' },
      }),
      personaTargets: false,
    },
  };
  return routes.map((key) => all[key]);
}

/** Epoch ms of the local midnight that starts `date` in `timeZone` (the zone's offset at noon that day). */
export function localDayStartMs(date: string, timeZone: string): number {
  const midnightUtc = Date.parse(`${date}T00:00:00Z`);
  const noon = new Date(midnightUtc + 12 * 3_600_000);
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', { timeZone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit' })
      .formatToParts(noon)
      .map((part) => [part.type, part.value]),
  );
  const localNoonAsUtc = Date.UTC(Number(parts['year']), Number(parts['month']) - 1, Number(parts['day']), Number(parts['hour']), Number(parts['minute']));
  return midnightUtc - (localNoonAsUtc - noon.getTime());
}

/**
 * Paths of a persona route with a new minute of the brain's last local day on every request:
 * minute 7·i mod 1440 (every one of the day's 1,440 minutes before any repeats) and second i
 * mod 60, so "today" and "yesterday" stay the brain's last two memory days.
 */
export function newMinutePaths(path: string, manifest: Pick<BrainManifest, 'endDate' | 'timezone'>, view?: 'session'): () => string {
  const start = localDayStartMs(manifest.endDate, manifest.timezone);
  let i = 0;
  return () => {
    const at = start + ((i * 7) % 1440) * 60_000 + (i % 60) * 1000;
    i++;
    return `${path}?now=${new Date(at).toISOString().replace('.000Z', 'Z')}${view === undefined ? '' : `&view=${view}`}`;
  };
}

export interface Sent {
  status: number;
  bytes: number;
  /** The body as it arrived (compressed when the server compressed it). */
  raw: Buffer;
  body: string;
  ms: number;
  contentType: string | undefined;
  contentEncoding: string | undefined;
  runId: string | undefined;
}

/** One request of `target` (or of `path` on its server), its answer read whole. */
export async function send(target: Target, path?: string): Promise<Sent> {
  const started = performance.now();
  const url = path === undefined ? target.url : new URL(path, target.url).href;
  const response = await request(url, {
    method: target.method,
    headers: target.headers,
    ...(target.body === undefined ? {} : { body: target.body }),
    headersTimeout: 10_000,
    bodyTimeout: 10_000,
  });
  const raw = Buffer.from(await response.body.arrayBuffer());
  const header = (name: string) => {
    const value = response.headers[name];
    return Array.isArray(value) ? value.join(', ') : value;
  };
  return {
    status: response.statusCode,
    bytes: raw.length,
    raw,
    body: raw.toString('utf8'),
    ms: performance.now() - started,
    contentType: header('content-type'),
    contentEncoding: header('content-encoding'),
    runId: header('x-run-id'),
  };
}

/** A problem's `code: detail`, short, or undefined when the body is not one. */
export function problemSummary(body: string): string | undefined {
  try {
    const problem = JSON.parse(body) as { code?: string; detail?: string };
    return [problem.code, problem.detail].filter(Boolean).join(': ').slice(0, 200) || undefined;
  } catch {
    return undefined;
  }
}

/** The server's `cc_trace_commits_total`, or null when it cannot be read. */
export async function traceCommits(base: string, token: string): Promise<number | null> {
  try {
    const response = await request(`${base}/metrics`, { headers: { authorization: `Bearer ${token}` }, headersTimeout: 10_000, bodyTimeout: 10_000 });
    const text = await response.body.text();
    if (response.statusCode !== 200) return null;
    const match = /^cc_trace_commits_total (\d+)$/m.exec(text);
    return match ? Number(match[1]) : 0;
  } catch {
    return null;
  }
}
