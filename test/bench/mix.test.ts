import { describe, expect, it } from 'vitest';
import { mixedRequests } from '../../bench/mix.js';
import { isValidTimeZone } from '../../src/core/zones.js';

const inputs = {
  token: 't',
  compileBody: { worker: 'scribe', phase: 'turn', message: 'Hello' },
  minuteAt: (i: number) => new Date(Date.UTC(2026, 10, 30, 23, 59) - i * 60_000).toISOString(),
  topicId: 'garden',
  seed: 'mix-test',
};

describe('the bench’s mixed distinct inputs (issue 25)', () => {
  it('sends 70 % distinct POST /compile and 10 % each of new-minute mars, randomly cased venus zones and new topic names', () => {
    const next = mixedRequests(inputs);
    const requests = Array.from({ length: 10_000 }, next);
    const share = (test: (path: string) => boolean) => requests.filter((request) => test(request.path)).length / requests.length;
    expect(share((path) => path === '/compile')).toBeCloseTo(0.7, 1);
    expect(share((path) => path.startsWith('/context/mars?now='))).toBeCloseTo(0.1, 1);
    expect(share((path) => path.startsWith('/context/venus?timezone='))).toBeCloseTo(0.1, 1);
    expect(share((path) => path.startsWith('/context/topic/garden?topicName='))).toBeCloseTo(0.1, 1);

    const compiles = requests.filter((request) => request.method === 'POST').map((request) => JSON.parse(request.body!) as { message: string; runId: string });
    expect(new Set(compiles.map((body) => body.message)).size).toBe(compiles.length);
    expect(new Set(compiles.map((body) => body.runId)).size).toBe(compiles.length);
    const others = requests.filter((request) => !request.path.startsWith('/context/venus') && request.method === 'GET').map((request) => request.path);
    expect(new Set(others).size).toBe(others.length);

    const zones = requests.filter((request) => request.path.startsWith('/context/venus')).map((request) => decodeURIComponent(request.path.split('=')[1]!));
    for (const zone of zones) expect(isValidTimeZone(zone), zone).toBe(true);
    expect(new Set(zones).size).toBeGreaterThan(100);
  });

  it('is the same sequence for the same seed', () => {
    const a = mixedRequests(inputs);
    const b = mixedRequests(inputs);
    for (let i = 0; i < 100; i++) expect(a()).toEqual(b());
  });
});
