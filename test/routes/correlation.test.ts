import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/config.js';
import { buildTestApp, TEST_TOKEN } from '../helpers/app.js';

const NOW = '2026-11-30T17:20:00Z';
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

const requestLines = (logs: Array<Record<string, unknown>>) => logs.filter((line) => line['msg'] === 'request');
/** The request line is written in onResponse, once the answer has gone. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('correlation', () => {
  it("echoes the caller's x-request-id and records it and its traceparent in the log line and the trace event", async () => {
    const built = await buildTestApp();
    const { app } = built;
    const response = await app.inject({
      url: `/context/mars?now=${NOW}&runId=call-7`,
      headers: { 'x-request-id': 'voice-call-42', traceparent: TRACEPARENT },
    });
    expect(response.statusCode).toBe(200);
    expect(response.headers['x-request-id']).toBe('voice-call-42');
    await settled();
    const [line] = requestLines(built.logs);
    expect(line).toMatchObject({ requestId: 'voice-call-42', traceparent: TRACEPARENT, runId: 'call-7', status: 200 });
    expect(line).not.toHaveProperty('code');
    const [event] = (await app.inject('/runs/call-7/trace')).json().events;
    expect(event).toMatchObject({ requestId: 'voice-call-42', traceparent: TRACEPARENT, verified: true });
  });

  it('ignores an invalid traceparent (no 400, nothing recorded) and replaces an unsafe x-request-id with its own', async () => {
    const built = await buildTestApp();
    const { app } = built;
    const response = await app.inject({
      url: `/context/venus?now=${NOW}&runId=call-8`,
      headers: { 'x-request-id': 'has spaces and "quotes"', traceparent: '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01' },
    });
    expect(response.statusCode).toBe(200);
    const requestId = response.headers['x-request-id'] as string;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    await settled();
    const [line] = requestLines(built.logs);
    expect(line).toMatchObject({ requestId });
    expect(line).not.toHaveProperty('traceparent');
    const [event] = (await app.inject('/runs/call-8/trace')).json().events;
    expect(event.requestId).toBe(requestId);
    expect(event).not.toHaveProperty('traceparent');
  });

  it('puts the problem code on the log line of every 4xx and 5xx, and the request id on every problem and its header', async () => {
    const built = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const { app } = built;
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };
    const unauthorized = await app.inject({ url: '/personas', headers: { 'x-request-id': 'req-401' } });
    const missing = await app.inject({ url: '/nope', headers: { ...auth, 'x-request-id': 'req-404' } });
    const invalid = await app.inject({ method: 'POST', url: '/compile', headers: auth, payload: { phase: 'turn' } });
    const failed = await app.inject({ method: 'POST', url: '/compile', headers: auth, payload: { phase: 'turn', surface: 'chat', worker: 'ghost', message: 'hi', now: NOW } });
    expect([unauthorized.statusCode, missing.statusCode, invalid.statusCode, failed.statusCode]).toEqual([401, 404, 400, 404]);
    for (const response of [unauthorized, missing, invalid, failed]) expect(response.headers['x-request-id']).toBe(response.json().requestId);
    await settled();
    expect(requestLines(built.logs).map((line) => [line['requestId'] === undefined ? null : line['status'], line['code']])).toEqual([
      [401, 'CC_UNAUTHORIZED'],
      [404, 'CC_ROUTE_NOT_FOUND'],
      [400, 'CC_VALIDATION_FAILED'],
      [404, 'CC_NOT_FOUND'],
    ]);
    expect(requestLines(built.logs)[0]).toMatchObject({ requestId: 'req-401' });
    // A 200 has no code.
    await app.inject({ url: '/healthz' });
    await settled();
    expect(requestLines(built.logs).at(-1)).not.toHaveProperty('code');
  });

  it('names the service release in x-context-compiler-version on every answer: delivered, 304, public, refused, unmatched and invalid', async () => {
    const { version } = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const auth = { authorization: `Bearer ${TEST_TOKEN}` };
    const delivered = await app.inject({ url: `/context/mars?now=${NOW}`, headers: auth });
    const answers = [
      delivered,
      await app.inject({ url: `/context/mars?now=${NOW}`, headers: { ...auth, 'if-none-match': delivered.headers.etag as string } }),
      await app.inject({ url: '/healthz' }),
      await app.inject({ url: '/context/mars' }),
      await app.inject({ url: '/nowhere', headers: auth }),
      await app.inject({ method: 'POST', url: '/compile', headers: auth, payload: { phase: 'later' } }),
    ];
    expect(answers.map((answer) => answer.statusCode)).toEqual([200, 304, 200, 401, 404, 400]);
    for (const answer of answers) expect(answer.headers['x-context-compiler-version']).toBe(version);
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
  });
});
