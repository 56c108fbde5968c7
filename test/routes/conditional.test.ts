import { describe, expect, it } from 'vitest';
import { buildTestApp } from '../helpers/app.js';

/** Issue 27: conditional requests on the compile routes. */

const NOW = '2026-11-30T17:30:00Z';

describe('regression: the ETag ignored engine and hud, so a 304 kept a stale route key', () => {
  it('answers 200 with the new route key when only engine changed, and 304 again once the ETag is the new one', async () => {
    const { app } = await buildTestApp();
    const get = (query: string, etag?: string) => app.inject({ url: `/context/mars?now=${NOW}${query}`, headers: etag ? { 'if-none-match': etag } : {} });
    const plain = await get('');
    const etag = plain.headers['etag'] as string;
    expect((await get('', etag)).statusCode).toBe(304);

    const engine = await get('&engine=gpt-realtime', etag);
    expect(engine.statusCode).toBe(200);
    expect(engine.json().cache.routeKey).not.toBe(plain.json().cache.routeKey);
    expect(engine.json().promptSha256).toBe(plain.json().promptSha256);
    expect(engine.headers['etag']).not.toBe(etag);
    expect((await get('&engine=gpt-realtime', engine.headers['etag'] as string)).statusCode).toBe(304);
    // Another engine again: a 304 for the first would keep the wrong key.
    expect((await get('&engine=other-engine', engine.headers['etag'] as string)).statusCode).toBe(200);
  });

  it('answers 200 with the HUD when ?hud=1 is added to an ETag of the answer without it, and the other way round', async () => {
    const { app } = await buildTestApp();
    const get = (query: string, etag?: string) => app.inject({ url: `/context/venus?now=${NOW}${query}`, headers: etag ? { 'if-none-match': etag } : {} });
    const plain = await get('');
    const withHud = await get('&hud=1', plain.headers['etag'] as string);
    expect(withHud.statusCode).toBe(200);
    expect(withHud.json().hud.files.length).toBeGreaterThan(0);
    expect(withHud.headers['etag']).not.toBe(plain.headers['etag']);
    expect((await get('&hud=1', withHud.headers['etag'] as string)).statusCode).toBe(304);
    expect((await get('', withHud.headers['etag'] as string)).statusCode).toBe(200);
    expect((await get('', plain.headers['etag'] as string)).statusCode).toBe(304);
  });

  it('keeps the text ETag to the instructions: engine and hud do not change the text, so they do not change its ETag', async () => {
    const { app } = await buildTestApp();
    const text = await app.inject(`/context/mars?now=${NOW}&format=text`);
    const etag = text.headers['etag'] as string;
    expect(etag).toMatch(/\.txt"$/);
    const again = await app.inject({ url: `/context/mars?now=${NOW}&format=text&engine=gpt-realtime&hud=1`, headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
  });

  it('covers engine and hud on POST /compile too', async () => {
    const { app } = await buildTestApp();
    const body = { phase: 'start', surface: 'direct', worker: 'scribe', now: NOW };
    const first = await app.inject({ method: 'POST', url: '/compile', payload: body });
    const etag = first.headers['etag'] as string;
    expect((await app.inject({ method: 'POST', url: '/compile', payload: body, headers: { 'if-none-match': etag } })).statusCode).toBe(304);
    const engine = await app.inject({ method: 'POST', url: '/compile', payload: { ...body, engine: 'gpt-5' }, headers: { 'if-none-match': etag } });
    expect(engine.statusCode).toBe(200);
    expect(engine.json().cache.routeKey).not.toBe(first.json().cache.routeKey);
    const hud = await app.inject({ method: 'POST', url: '/compile?hud=1', payload: body, headers: { 'if-none-match': etag } });
    expect(hud.statusCode).toBe(200);
    expect(hud.json().hud).toBeDefined();
  });
});

describe('regression: If-None-Match: * gave 304 on POST /compile, where RFC 9110 calls for 412', () => {
  it('answers 412 with a problem before compiling or tracing anything', async () => {
    const { app } = await buildTestApp();
    for (const header of ['*', ' * ', 'W/"x", *']) {
      const response = await app.inject({ method: 'POST', url: '/compile', payload: { phase: 'start', surface: 'direct', worker: 'scribe', runId: 'run-star' }, headers: { 'if-none-match': header } });
      expect(response.statusCode, header).toBe(412);
      expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(response.json()).toMatchObject({ status: 412, code: 'CC_PRECONDITION_FAILED', errors: [{ path: '/headers/if-none-match' }] });
      expect(response.headers['x-run-id']).toBeUndefined();
      expect(response.headers['etag']).toBeUndefined();
    }
    expect((await app.inject('/runs/run-star/trace')).statusCode).toBe(404);
  });

  it('keeps 304 for If-None-Match: * on GET, where a current representation means "not modified"', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject({ url: '/context/mars?runId=run-star-get', headers: { 'if-none-match': '*' } });
    expect(response.statusCode).toBe(304);
    const [event] = (await app.inject('/runs/run-star-get/trace')).json().events;
    expect(event).toMatchObject({ status: 304, outcome: 'not-modified' });
  });
});
