import { getHeapStatistics } from 'node:v8';
import underPressure from '@fastify/under-pressure';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { PressureLimits } from '../config.js';
import { ProblemError } from '../errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Answered even while the replica sheds load: the probes and `/metrics`, which show why. */
    overloadExempt?: boolean;
  }
}

/** `Retry-After` (seconds) of a shed request: about two samples, by when this replica (or another one) can take it. */
const OVERLOADED_RETRY_AFTER_S = 2;

/** `PRESSURE_MAX_HEAP_USED=auto`: this share of the V8 heap limit (≈ 159 MB under `npm start`'s flags: a 176 MB limit, which counts the young generation). */
const AUTO_HEAP_SHARE = 0.9;

/** What the thresholds are read against: `app.memoryUsage()` of under-pressure, sampled every `sampleIntervalMs`. */
export interface PressureSample {
  eventLoopDelay: number;
  eventLoopUtilized: number;
  heapUsed: number;
}

/** The thresholds in force, `auto` resolved. */
export interface ResolvedPressureLimits extends PressureLimits {
  readonly maxHeapUsedBytes: number;
}

export function resolvePressureLimits(limits: PressureLimits, heapLimitBytes = getHeapStatistics().heap_size_limit): ResolvedPressureLimits {
  return { ...limits, maxHeapUsedBytes: limits.maxHeapUsedBytes ?? Math.floor(heapLimitBytes * AUTO_HEAP_SHARE) };
}

const MB = 1024 * 1024;

/**
 * Why the replica is overloaded, naming the first threshold a sample is over and its
 * variable; null when it is over none. Thresholds of 0 are off.
 */
export function overloadReason(sample: PressureSample, limits: ResolvedPressureLimits): string | null {
  if (limits.maxEventLoopDelayMs > 0 && sample.eventLoopDelay > limits.maxEventLoopDelayMs) {
    // under-pressure reads a sample in which the loop never turned (blocked throughout) as an infinite delay.
    const delay = Number.isFinite(sample.eventLoopDelay) ? `${Math.round(sample.eventLoopDelay)} ms` : `longer than the last sample (${limits.sampleIntervalMs} ms)`;
    return `event-loop delay ${delay} is over PRESSURE_MAX_EVENT_LOOP_DELAY (${limits.maxEventLoopDelayMs} ms)`;
  }
  if (limits.maxHeapUsedBytes > 0 && sample.heapUsed > limits.maxHeapUsedBytes) {
    return `heap in use ${(sample.heapUsed / MB).toFixed(1)} MB is over PRESSURE_MAX_HEAP_USED (${(limits.maxHeapUsedBytes / MB).toFixed(1)} MB)`;
  }
  if (limits.maxEventLoopUtilization > 0 && sample.eventLoopUtilized > limits.maxEventLoopUtilization) {
    return `event-loop utilisation ${sample.eventLoopUtilized.toFixed(3)} is over PRESSURE_MAX_EVENT_LOOP_UTILIZATION (${limits.maxEventLoopUtilization})`;
  }
  return null;
}

/**
 * Load shedding with `@fastify/under-pressure`: the process is sampled every
 * `sampleIntervalMs` (mean event-loop delay over the interval, event-loop utilisation over the
 * interval, heap in use); while a sample is over a threshold, every request but the exempt
 * ones is refused at once — first hook, nothing read, nothing compiled — with a 503 problem
 * `CC_OVERLOADED` and `Retry-After`, and `/readyz` answers 503 naming the threshold, so the
 * orchestrator routes around the replica. `/healthz` stays 200: an overloaded process is
 * alive, and restarting it would only move its load.
 */
export const pressurePlugin = fp(
  async function pressurePlugin(app: FastifyInstance, options: PressureLimits) {
    const limits = resolvePressureLimits(options);
    const shed = app.metrics.requestsShed;
    await app.register(underPressure, {
      sampleInterval: limits.sampleIntervalMs,
      maxEventLoopDelay: limits.maxEventLoopDelayMs,
      maxEventLoopUtilization: limits.maxEventLoopUtilization,
      // Utilisation over the last sample, not since the process started.
      eventLoopUtilizationMode: 'interval',
      maxHeapUsedBytes: limits.maxHeapUsedBytes,
      pressureHandler: (request, _reply, type) => {
        if (request.routeOptions.config.overloadExempt === true) return undefined;
        shed.inc({ reason: type });
        const reason = overloadReason(app.memoryUsage(), limits) ?? `${type} is over its threshold`;
        return Promise.reject(
          new ProblemError('CC_OVERLOADED', `This replica is overloaded: ${reason}. Retry in ${OVERLOADED_RETRY_AFTER_S} s; another replica may answer.`, {
            headers: { 'retry-after': String(OVERLOADED_RETRY_AFTER_S) },
          }),
        );
      },
    });
    app.readinessChecks.push({
      name: 'load',
      check: async () => {
        if (!app.isUnderPressure()) return;
        throw new Error(overloadReason(app.memoryUsage(), limits) ?? 'over a load threshold');
      },
    });
  },
  { name: 'pressure', dependencies: ['metrics'] },
);
