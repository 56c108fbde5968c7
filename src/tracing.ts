/**
 * The compile routes' OpenTelemetry spans, exported over OTLP/HTTP (JSON) in batches. Loaded
 * only when an endpoint is configured (`src/http/telemetry.ts` imports this module then), so
 * a service without tracing never loads the SDK. Nothing is registered globally: the
 * provider belongs to one app, as its metrics registry does, and is shut down (its last
 * batch exported) when the app closes.
 *
 * @see https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/
 * @see https://opentelemetry.io/docs/specs/semconv/http/http-spans/
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BasicTracerProvider,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  type Sampler,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { Logger } from 'pino';
import type { TelemetryConfig } from './config.js';
import { SERVICE_VERSION } from './version.js';

/** One compile route's answer, as its span records it: identifiers, digests and counts, never a prompt or brain text. */
export interface CompileSpan {
  /** `GET /context/:persona`: the route's pattern, the span's name. */
  name: string;
  method: string;
  route: string;
  /** Epoch ms when the request arrived, and when its answer was sent. */
  startTime: number;
  endTime: number;
  status: number;
  /** The caller's W3C `traceparent` (already validated), whose span this one is a child of; null for a root span. */
  traceparent: string | null;
  attributes: Attributes;
}

/** How long closing waits for the last batch of spans: the trace store's flush, not the spans, is what closing must finish. */
const SHUTDOWN_EXPORT_MS = 2_000;

export interface Tracing {
  emit(span: CompileSpan): void;
  /** Exports what is still batched and stops; later spans are dropped. */
  shutdown(): Promise<void>;
}

/**
 * A collector that is down or refuses spans costs the service nothing but those spans: each
 * failed export is one warning line, and closing never fails because of it (the SDK's own
 * `shutdown()` rejects when its last export fails).
 */
export function createTracing(config: TelemetryConfig, log: Logger): Tracing {
  const collector = new URL(config.tracesUrl).origin;
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': SERVICE_VERSION }),
    sampler: samplerFor(config),
    spanProcessors: [new BatchSpanProcessor(warnOnFailure(new OTLPTraceExporter({ url: config.tracesUrl }), collector, log))],
  });
  const tracer = provider.getTracer('context-compiler', SERVICE_VERSION);
  return {
    emit(span) {
      const parent = parentContext(span.traceparent);
      const started = tracer.startSpan(
        span.name,
        {
          kind: SpanKind.SERVER,
          startTime: span.startTime,
          attributes: { 'http.request.method': span.method, 'http.route': span.route, 'http.response.status_code': span.status, ...span.attributes },
        },
        parent,
      );
      // A server span is an error when the server failed (5xx), not when the caller's request did (4xx).
      if (span.status >= 500) started.setStatus({ code: SpanStatusCode.ERROR });
      started.end(span.endTime);
    },
    async shutdown() {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<void>((resolve) => {
        timer = setTimeout(() => {
          log.warn({ collector, waitedMs: SHUTDOWN_EXPORT_MS }, 'gave up exporting the last spans before closing');
          resolve();
        }, SHUTDOWN_EXPORT_MS);
      });
      const exported = provider.shutdown().catch((error: unknown) => {
        log.warn({ collector, err: error }, 'could not export the last spans before closing');
      });
      await Promise.race([exported, late]).finally(() => clearTimeout(timer));
    },
  };
}

/** The exporter, with one warning per failed export (the collector's origin, never a span's content). */
function warnOnFailure(exporter: SpanExporter, collector: string, log: Logger): SpanExporter {
  return {
    export(spans, done) {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS) log.warn({ collector, spans: spans.length, err: result.error }, 'could not export spans to the OpenTelemetry collector');
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

/** The caller's span as a remote parent: the new span joins its trace. */
function parentContext(traceparent: string | null): Context {
  if (traceparent === null) return ROOT_CONTEXT;
  const [, traceId, spanId, flags] = traceparent.split('-') as [string, string, string, string];
  return trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true });
}

function samplerFor(config: TelemetryConfig): Sampler {
  const ratio = new TraceIdRatioBasedSampler(config.samplerRatio);
  switch (config.sampler) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return ratio;
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: ratio });
  }
}
