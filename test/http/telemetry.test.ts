import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { buildTestApp, tempDir } from '../helpers/app.js';
import { buildDist } from '../helpers/build.js';
import { CLI_ENTRY, runNode } from '../helpers/server-process.js';

const NOW = '2026-11-30T17:05:00Z';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: OtlpAttribute[];
  status?: { code?: number };
}
interface OtlpRequest {
  resourceSpans: Array<{ resource: { attributes: OtlpAttribute[] }; scopeSpans: Array<{ spans: OtlpSpan[] }> }>;
}

/**
 * A local OTLP/HTTP collector on loopback: keeps every body posted to /v1/traces, raw and
 * decoded from the JSON encoding, and answers 200 as a collector does.
 */
async function startReceiver() {
  const bodies: Array<{ path: string; contentType: string; raw: string; json: OtlpRequest }> = [];
  const server = createServer((request: IncomingMessage, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      bodies.push({ path: request.url ?? '', contentType: String(request.headers['content-type']), raw, json: JSON.parse(raw) as OtlpRequest });
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bodies,
    spans: () => bodies.flatMap((body) => body.json.resourceSpans.flatMap((resource) => resource.scopeSpans.flatMap((scope) => scope.spans))),
  };
}

function attributesOf(attributes: OtlpAttribute[]): Record<string, string | number | boolean> {
  return Object.fromEntries(
    attributes.map(({ key, value }) => [key, value.stringValue ?? (value.intValue !== undefined ? Number(value.intValue) : (value.doubleValue ?? value.boolValue!))]),
  );
}

describe('OpenTelemetry spans of the compile routes', () => {
  it('exports one server span per compile, a child of the caller’s traceparent, with the delivery’s facts and no prompt or brain text', async () => {
    const receiver = await startReceiver();
    const { app } = await buildTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_SERVICE_NAME: 'voice-edge-compiler' });
    const traceparent = `00-${TRACE_ID}-${PARENT_ID}-01`;
    const persona = await app.inject({ url: `/context/mars?now=${NOW}&provider=gemini`, headers: { traceparent } });
    expect(persona.statusCode).toBe(200);
    const worker = await app.inject({ method: 'POST', url: '/compile', payload: { phase: 'start', surface: 'direct', worker: 'archivist', now: NOW } });
    expect(worker.statusCode).toBe(200);
    // Reached the compile and failed: still a span, with the problem's code.
    const missing = await app.inject({ method: 'POST', url: '/compile', payload: { phase: 'start', surface: 'direct', worker: 'nobody-here', now: NOW }, headers: { traceparent } });
    expect(missing.statusCode).toBe(404);
    // Not a compile route: no span.
    expect((await app.inject('/healthz')).statusCode).toBe(200);
    // Closing the app exports what is still batched.
    await app.close();

    expect(receiver.bodies.map((body) => [body.path, body.contentType])).toContainEqual(['/v1/traces', 'application/json']);
    const resource = attributesOf(receiver.bodies[0]!.json.resourceSpans[0]!.resource.attributes);
    expect(resource).toMatchObject({ 'service.name': 'voice-edge-compiler' });
    const spans = receiver.spans();
    expect(spans.map((span) => span.name).sort()).toEqual(['GET /context/:persona', 'POST /compile', 'POST /compile']);

    const body = persona.json();
    const personaSpan = spans.find((span) => span.name === 'GET /context/:persona')!;
    expect(personaSpan).toMatchObject({ traceId: TRACE_ID, parentSpanId: PARENT_ID, kind: 2 });
    const facts = attributesOf(personaSpan.attributes);
    expect(facts).toMatchObject({
      'http.request.method': 'GET',
      'http.route': '/context/:persona',
      'http.response.status_code': 200,
      'cc.persona': 'mars',
      'cc.run_id': body.runId,
      'cc.provider': 'gemini',
      'cc.prompt.sha256': body.promptSha256,
      'cc.prompt.tokens': body.tokens.total,
      'cc.warnings': body.warnings.length,
    });
    const stable = body.cache.boundaries.filter((boundary: { class: string }) => boundary.class !== 'volatile');
    expect(facts['cc.cache.prefix_tokens']).toBe(Math.max(...stable.map((boundary: { tokens: number }) => boundary.tokens)));
    expect(facts['cc.cache.prefix_tokens']).toBeGreaterThan(0);
    expect(typeof facts['cc.trace.durable_ms']).toBe('number');

    // A request without a traceparent starts a trace of its own.
    const workerSpan = spans.find((span) => attributesOf(span.attributes)['cc.worker'] === 'archivist');
    const failedSpan = spans.find((span) => attributesOf(span.attributes)['cc.worker'] === 'nobody-here');
    expect(workerSpan!.traceId).not.toBe(TRACE_ID);
    expect(workerSpan!.parentSpanId ?? '').toBe('');
    expect(attributesOf(workerSpan!.attributes)).toMatchObject({ 'cc.worker': 'archivist', 'cc.run_id': worker.json().runId, 'cc.prompt.sha256': worker.json().promptSha256 });
    expect(failedSpan).toMatchObject({ traceId: TRACE_ID, parentSpanId: PARENT_ID });
    expect(attributesOf(failedSpan!.attributes)).toMatchObject({ 'cc.worker': 'nobody-here', 'cc.error.code': 'CC_NOT_FOUND', 'http.response.status_code': 404 });

    // No text of the prompts (hence of the brain) reached the collector: not one line of them.
    const raw = receiver.bodies.map((each) => each.raw).join('\n');
    const lines = [body.systemPrompt, worker.json().systemPrompt].join('\n').split('\n').map((line: string) => line.trim()).filter((line: string) => line.length >= 12);
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) expect(raw.includes(JSON.stringify(line).slice(1, -1)), line).toBe(false);
  });

  it('follows the caller’s sampling decision by default, and OTEL_TRACES_SAMPLER=always_off exports nothing', async () => {
    const receiver = await startReceiver();
    const parentBased = await buildTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: `${receiver.endpoint}/` });
    expect((await parentBased.app.inject({ url: `/context/mars?now=${NOW}`, headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-00` } })).statusCode).toBe(200);
    expect((await parentBased.app.inject({ url: `/context/venus?now=${NOW}`, headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` } })).statusCode).toBe(200);
    await parentBased.app.close();
    expect(receiver.spans().map((span) => attributesOf(span.attributes)['cc.persona'])).toEqual(['venus']);

    const off = await buildTestApp({ OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_TRACES_SAMPLER: 'always_off' });
    expect((await off.app.inject({ url: `/context/mars?now=${NOW}`, headers: { traceparent: `00-${TRACE_ID}-${PARENT_ID}-01` } })).statusCode).toBe(200);
    await off.app.close();
    expect(receiver.spans()).toHaveLength(1);
  });

  it('is off without an endpoint: a service that serves a compile never loads the OpenTelemetry SDK', { timeout: 120_000 }, async () => {
    await buildDist();
    const app = join(dirname(CLI_ENTRY), 'app.js');
    const config = join(dirname(CLI_ENTRY), 'config.js');
    const script = `
      import { createRequire } from 'node:module';
      const { buildApp } = await import(${JSON.stringify(app)});
      const { loadConfig } = await import(${JSON.stringify(config)});
      // The API package alone may be loaded by a dependency that instruments itself when an SDK is registered; the SDK and the exporter only by this service's tracing.
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).filter((path) => path.includes('/@opentelemetry/sdk-trace') || path.includes('/@opentelemetry/exporter-trace-otlp-http/')).length;
      for (const env of [{}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }]) {
        const service = await buildApp(loadConfig({ ...env, LOG_LEVEL: 'silent', TRACE_DIR: process.env.TRACE_DIR }));
        const answer = await service.inject('/context/mars?now=${NOW}');
        await service.close();
        process.stdout.write(answer.statusCode + ' ' + loaded() + '\\n');
      }`;
    const { code, stdout, stderr } = await runNode(['--input-type=module', '-e', script], { TRACE_DIR: join(await tempDir(), 'traces') });
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const [without, withEndpoint] = stdout.trim().split('\n').map((line) => line.split(' ').map(Number));
    expect(without).toEqual([200, 0]);
    expect(withEndpoint![0]).toBe(200);
    expect(withEndpoint![1]).toBeGreaterThan(0);
  });
});
