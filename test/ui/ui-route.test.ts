import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import rateLimit from '@fastify/rate-limit';
import Fastify from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { UI_CONTENT_SECURITY_POLICY, UI_DIR, UI_FILES, uiRoutes } from '../../routes/ui.js';
import { PROJECT_ROOT } from '../../src/config.js';
import { problemPlugin } from '../../src/http/problem.js';
import { zodSerializerCompiler } from '../../src/http/serializer.js';
import { zodValidatorCompiler } from '../../src/http/zod.js';
import { buildTestApp, tempDir, TEST_TOKEN } from '../helpers/app.js';
import { buildDist } from '../helpers/build.js';

const PROBLEM = /^application\/problem\+json/;

beforeAll(async () => {
  await buildDist();
}, 120_000);

describe('GET /ui/', () => {
  it('serves the page with a strict CSP and no inline script, style or handler', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject('/ui/');
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(response.headers['content-security-policy']).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['referrer-policy']).toBe('no-referrer');
    const html = response.body;
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) expect(tag).toMatch(/\ssrc="\.\/[a-z-]+\.js"/);
    expect(html).not.toMatch(/<script\b[^>]*>[^<]+<\/script>/);
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
    // Everything the page loads is one of the served files.
    const referenced = [...html.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((match) => match[1]);
    expect(referenced.length).toBeGreaterThan(0);
    for (const file of referenced) expect(Object.keys(UI_FILES)).toContain(file);
  });

  it('serves each file of the viewer with its content type and the same headers', async () => {
    const { app } = await buildTestApp();
    for (const [file, type] of Object.entries(UI_FILES)) {
      const response = await app.inject(`/ui/${file}`);
      expect(response.statusCode, file).toBe(200);
      expect(response.headers['content-type'], file).toBe(type);
      expect(response.headers['content-security-policy'], file).toBe(UI_CONTENT_SECURITY_POLICY);
      expect(response.headers['x-content-type-options'], file).toBe('nosniff');
      expect(response.body, file).toBe(await readFile(join(UI_DIR, file), 'utf8'));
    }
  });

  it('lists exactly the files the build makes from ui/', async () => {
    const modules = (await readdir(join(PROJECT_ROOT, 'ui/src'))).filter((name) => name.endsWith('.ts')).map((name) => name.replace(/\.ts$/, '.js'));
    expect(Object.keys(UI_FILES).sort()).toEqual(['index.html', 'styles.css', ...modules].sort());
  });

  it('ships scripts that import only served files and never write HTML', async () => {
    for (const file of Object.keys(UI_FILES).filter((name) => name.endsWith('.js'))) {
      const source = await readFile(join(UI_DIR, file), 'utf8');
      for (const [, imported] of source.matchAll(/\bfrom\s+['"]\.\/([^'"]+)['"]/g)) expect(Object.keys(UI_FILES), file).toContain(imported);
      expect(source, file).not.toMatch(/\b(innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval)\b|new Function/);
      expect(source, file).not.toMatch(/https?:\/\//);
    }
  });

  it('answers a 404 problem for anything outside the bundle, however the path is spelled', async () => {
    const { app } = await buildTestApp();
    for (const url of [
      '/ui/..%2Fpackage.json',
      '/ui/%2e%2e%2fsrc%2fconfig.ts',
      '/ui/main.ts',
      '/ui/main.js.map',
      '/ui/index.html%00',
      '/ui/.env',
      '/ui/constructor',
      '/ui/__proto__',
      '/ui/hasOwnProperty',
    ]) {
      const response = await app.inject(url);
      expect(response.statusCode, url).toBe(404);
      expect(response.headers['content-type'], url).toMatch(PROBLEM);
      expect(response.body, url).not.toMatch(/"name"\s*:\s*"context-compiler"|import /);
    }
    const long = await app.inject(`/ui/${'a'.repeat(65)}.js`);
    expect(long.statusCode).toBe(400);
    expect(long.headers['content-type']).toMatch(PROBLEM);
  });

  it('redirects /ui to /ui/ with a relative location', async () => {
    const { app } = await buildTestApp();
    const response = await app.inject('/ui');
    expect(response.statusCode).toBe(308);
    expect(response.headers.location).toBe('ui/');
    expect(new URL(response.headers.location!, 'http://h/ui').pathname).toBe('/ui/');
  });

  it('is public when tokens are configured, while the data behind it is not', async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    expect((await app.inject('/ui/')).statusCode).toBe(200);
    expect((await app.inject('/ui/main.js')).statusCode).toBe(200);
    expect((await app.inject('/runs')).statusCode).toBe(401);
    expect((await app.inject({ url: '/runs', headers: { authorization: `Bearer ${TEST_TOKEN}` } })).statusCode).toBe(200);
  });

  it('answers 304 to If-None-Match with the ETag', async () => {
    const { app } = await buildTestApp();
    const first = await app.inject('/ui/styles.css');
    const etag = first.headers.etag as string;
    expect(etag).toMatch(/^"[0-9a-f]{32}"$/);
    const again = await app.inject({ url: '/ui/styles.css', headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers['content-security-policy']).toBe(UI_CONTENT_SECURITY_POLICY);
  });

  it('answers 503 with a hint, not a crash, when the viewer was never built', async () => {
    const app = Fastify({ logger: false });
    app.setValidatorCompiler(zodValidatorCompiler);
    app.setSerializerCompiler(zodSerializerCompiler);
    await app.register(rateLimit, { global: false });
    await app.register(problemPlugin);
    await app.register(uiRoutes, { dir: await tempDir('cc-no-ui-') });
    await app.ready();
    try {
      const response = await app.inject('/ui/');
      expect(response.statusCode).toBe(503);
      expect(response.headers['content-type']).toMatch(PROBLEM);
      expect(response.json().detail).toContain('npm run build');
    } finally {
      await app.close();
    }
  });
});
