import { setTimeout as sleep } from 'node:timers/promises';
import { fmt, out } from '../lib/format.js';
import { buildTargets, problemSummary, send } from '../lib/requests.js';
import type { Bench } from '../lib/servers.js';

export interface Cold {
  spawnToListeningMs: number;
  firstRequestMs: number;
  firstStatus: number;
  listeningToFirst200Ms: number | null;
  attempts: number;
  note?: string;
}

/** The first `GET /context/mars` after start, from the moment the port accepts connections. */
export async function measureCold(bench: Bench): Promise<Cold> {
  const { spawnedAt, listeningAt, base } = bench.server;
  const target = bench.targets.find((t) => t.key === 'mars') ?? buildTargets(base, bench.token, bench.brain.manifest, ['mars'], bench.encoding)[0]!;
  let attempts = 1;
  const first = await send(target);
  const cold: Cold = {
    spawnToListeningMs: listeningAt - spawnedAt,
    firstRequestMs: first.ms,
    firstStatus: first.status,
    listeningToFirst200Ms: first.status === 200 ? performance.now() - listeningAt : null,
    attempts,
  };
  // Only "not ready yet" is worth retrying; any other status is the route's answer.
  let last = first;
  while (last.status === 503 && performance.now() - listeningAt < 10_000) {
    await sleep(5);
    last = await send(target);
    attempts++;
    if (last.status === 200) cold.listeningToFirst200Ms = performance.now() - listeningAt;
  }
  cold.attempts = attempts;
  if (cold.listeningToFirst200Ms === null) cold.note = `no 200: status ${last.status}${problemSummary(last.body) ? ` (${problemSummary(last.body)})` : ''}`;
  out(`cold: listening ${fmt.ms(cold.spawnToListeningMs)} ms after spawn; first /context/mars ${fmt.ms(cold.firstRequestMs)} ms ` +
    `(status ${cold.firstStatus}); first 200 ${cold.listeningToFirst200Ms === null ? cold.note : `${fmt.ms(cold.listeningToFirst200Ms)} ms after listening`}`);
  return cold;
}
