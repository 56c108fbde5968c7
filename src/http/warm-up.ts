/**
 * Ready means warm. Once the app is ready, the routes' warm-up tasks build what a first
 * request would build — each persona compiled, its answer written (serializers, token counts,
 * clock formatters, the persona's day kept with its reads, compiled code) — and `/readyz`
 * answers 503 (`warm`) until they are done, so a voice server's first call after a start is
 * as fast as the next. It never holds the process: the app listens and `/healthz` answers
 * meanwhile, however slow the brain. A brain that changes while the tasks read it (a sync
 * still writing at start) is warmed again, up to `MAX_WARM_ROUNDS` rounds. Nothing is traced
 * and no prompt is logged: the log line says how long it took and how many rounds.
 */
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyInstance {
    /** Where routes add what they build before `/readyz` answers 200 (`src/http/warm-up.ts`). */
    warmUp: WarmUp;
  }
}

/** What a route builds before the service is ready. */
export interface WarmTask {
  name: string;
  /** Builds it; resolves true when something was read afresh from the brain (on a later round: the brain changed since the last). */
  run(): Promise<boolean>;
}

export interface WarmUp {
  add(task: WarmTask): void;
}

/** Rounds of the tasks at most: the first reads everything; each later one confirms the brain did not change meanwhile. */
const MAX_WARM_ROUNDS = 4;

export interface WarmUpPluginOptions {
  /** false: no warm-up and no `warm` readiness check (tests that count reads or cache operations). */
  enabled?: boolean;
}

type State = { phase: 'waiting' | 'warming' } | { phase: 'done'; note?: string };

export const warmUpPlugin = fp(
  async function warmUpPlugin(app: FastifyInstance, options: WarmUpPluginOptions) {
    const tasks: WarmTask[] = [];
    app.decorate('warmUp', { add: (task: WarmTask) => void tasks.push(task) });
    if (options.enabled === false) return;
    let state: State = { phase: 'waiting' };
    let closing = false;

    async function warm(): Promise<void> {
      const began = performance.now();
      let rounds = 0;
      let settled = false;
      while (!settled && rounds < MAX_WARM_ROUNDS && !closing) {
        rounds++;
        let fresh = false;
        for (const task of tasks) {
          if (closing) return;
          if (await task.run()) fresh = true;
        }
        // The first round reads everything; a later one that reads nothing afresh saw the brain as the one before it.
        settled = rounds > 1 && !fresh;
      }
      const ms = Math.round(performance.now() - began);
      app.log.info({ tasks: tasks.map((task) => task.name), rounds, settled, ms }, 'warmed up');
      state = settled ? { phase: 'done' } : { phase: 'done', note: `the brain kept changing during ${rounds} warm-up rounds; serving anyway` };
    }

    app.readinessChecks.push({
      name: 'warm',
      check: async () => {
        if (state.phase === 'done') return state.note;
        throw new Error('warming up: compiling each persona once before the first call');
      },
    });
    // Started, not awaited: listening and /healthz never wait for the brain.
    app.addHook('onReady', async () => {
      state = { phase: 'warming' };
      void warm().catch((error: unknown) => {
        app.log.warn({ err: error }, 'warm-up failed; the first calls compile cold');
        state = { phase: 'done', note: 'warm-up failed; the first calls compile cold' };
      });
    });
    app.addHook('onClose', async () => {
      closing = true;
    });
  },
  { name: 'warm-up' },
);
