import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseKnobs } from '../../bench/lib/knobs.js';
import { BenchError } from '../../bench/lib/processes.js';
import { PROJECT_ROOT } from '../../src/config.js';

describe('the bench knobs', () => {
  it('default to the full run on the 10,000-page brain in bench/brain', () => {
    const knobs = parseKnobs({});
    expect(knobs).toMatchObject({ BENCH_REQUESTS: 0, BENCH_DURATION: 10, BENCH_WARMUP: 5, BENCH_CONNECTIONS: 32, BENCH_SCALE: 1, BENCH_RUNS_MATCHING: 2000, BENCH_RESTARTS: 10, BENCH_WORKERS: 2 });
    expect(knobs.BENCH_BRAIN).toBe(join(PROJECT_ROOT, 'bench/brain'));
    expect(knobs.BENCH_ROUTES).toEqual(['mars', 'venus', 'topic', 'compile']);
  });

  it('BENCH_SMOKE=1 makes every window short and the brain small and temporary, and a knob set explicitly still wins', () => {
    const smoke = parseKnobs({ BENCH_SMOKE: '1', BENCH_ROUTES: 'mars', BENCH_WORKERS: '2' });
    expect(smoke).toMatchObject({ BENCH_REQUESTS: 40, BENCH_DURATION: 0.25, BENCH_WARMUP: 0, BENCH_COMPILE_DURATION: 0.25, BENCH_DISTINCT_DURATION: 0.25, BENCH_MIX_DURATION: 0.25, BENCH_SCALE: 0.02, BENCH_RESTARTS: 1, BENCH_RUNS_MATCHING: 20, BENCH_ROUTES: ['mars'], BENCH_WORKERS: 2 });
    expect(smoke.BENCH_BRAIN.startsWith(tmpdir())).toBe(true);
    expect(smoke.BENCH_OUT.startsWith(tmpdir())).toBe(true);
    // Another value of BENCH_SMOKE is not a smoke run.
    expect(parseKnobs({ BENCH_SMOKE: '0' }).BENCH_DURATION).toBe(10);
  });

  it('refuse a bad value naming each variable, and leave out other BENCH_ variables and empty ones', () => {
    expect(() => parseKnobs({ BENCH_DURATION: '0', BENCH_ROUTES: 'mars,pluto' })).toThrow(BenchError);
    expect(() => parseKnobs({ BENCH_DURATION: '0', BENCH_ROUTES: 'mars,pluto' })).toThrow(/BENCH_DURATION[\s\S]*BENCH_ROUTES/);
    expect(() => parseKnobs({ BENCH_SCALE: '1.5' })).toThrow(/BENCH_SCALE/);
    expect(parseKnobs({ BENCH_DURATION: '', PATH: '/bin' }).BENCH_DURATION).toBe(10);
    // Seconds may be a fraction, down to a tenth for a measured window.
    expect(parseKnobs({ BENCH_DURATION: '0.5', BENCH_WARMUP: '0.2' })).toMatchObject({ BENCH_DURATION: 0.5, BENCH_WARMUP: 0.2 });
    expect(() => parseKnobs({ BENCH_DURATION: '0.05' })).toThrow(/BENCH_DURATION/);
  });
});
