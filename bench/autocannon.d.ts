// autocannon 8 ships no types; this declares the part of its programmatic API the harness uses.
// @see https://github.com/mcollina/autocannon#api
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Histogram {
      average: number;
      mean: number;
      stddev: number;
      min: number;
      max: number;
      total: number;
      p50: number;
      p97_5: number;
      p99: number;
    }
    interface Options {
      url: string;
      method?: 'GET' | 'POST';
      headers?: Record<string, string>;
      body?: string;
      connections?: number;
      pipelining?: number;
      /** Seconds. */
      duration?: number;
      /** Milliseconds between samples (1000); the run stops at the first sample after `duration`. */
      sampleInt?: number;
      /** Requests to answer, then stop; `duration` is then ignored. */
      amount?: number;
      /** Seconds. */
      timeout?: number;
      title?: string;
      /** Requests sent in turn on each connection; `setupRequest` may rewrite each one before it is sent. */
      requests?: RequestSpec[];
    }
    interface RequestSpec {
      method?: 'GET' | 'POST';
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      setupRequest?: (request: RequestSpec & { path: string }, context: Record<string, unknown>) => RequestSpec;
    }
    interface Result {
      title?: string;
      url: string;
      duration: number;
      requests: Histogram & { sent: number };
      latency: Histogram;
      throughput: Histogram;
      errors: number;
      timeouts: number;
      non2xx: number;
      '2xx': number;
      '4xx': number;
      '5xx': number;
      statusCodeStats: Record<string, { count: number }>;
      start: Date;
      finish: Date;
    }
    interface Instance extends EventEmitter, PromiseLike<Result> {
      stop(): void;
      on(event: 'response', listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void): this;
      on(event: string, listener: (...args: unknown[]) => void): this;
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance;
  export = autocannon;
}
