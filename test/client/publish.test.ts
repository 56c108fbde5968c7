/**
 * The client package as the registry would get it: `npm pack` of packages/client, checked by
 * the tools integrators trust — publint (package.json against the packed files) and
 * @arethetypeswrong/cli (its types as TypeScript resolves them) — offline, on the tarball;
 * its publishing metadata; and the one version rule it keeps with the service.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createClient, SERVICE_MAJOR } from '@context-compiler/client';
import { PROJECT_ROOT } from '../../src/config.js';
import { buildTestApp } from '../helpers/app.js';

const run = promisify(execFile);
const CLIENT = join(PROJECT_ROOT, 'packages/client');

let packDir: string;
let tarball: string;

beforeAll(async () => {
  packDir = await mkdtemp(join(tmpdir(), 'cc-client-publish-'));
  // As a release would: npm pack runs the package's prepack (its build).
  await run('npm', ['pack', '--workspace', '@context-compiler/client', '--pack-destination', packDir, '--loglevel=error'], { cwd: PROJECT_ROOT, timeout: 170_000 });
  tarball = join(packDir, (await readdir(packDir)).find((name) => name.endsWith('.tgz'))!);
}, 180_000);

afterAll(() => rm(packDir, { recursive: true, force: true }));

describe('the packed client package', () => {
  it('passes publint, strict, with nothing to suggest', async () => {
    const bytes = await readFile(tarball);
    const { messages, pkg } = await publint({ pack: { tarball: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer }, strict: true, level: 'suggestion' });
    expect(messages.map((message) => `${message.type}: ${formatMessage(message, pkg) ?? message.code}`)).toEqual([]);
  });

  it('has types that resolve under node16/nodenext (from ESM) and bundler, by @arethetypeswrong/cli on the tarball', async () => {
    const attw = join(PROJECT_ROOT, 'node_modules/@arethetypeswrong/cli/dist/index.js');
    // An ESM-only package: require() from CommonJS and node10 do not apply (--profile esm-only); anything else is an error (exit 1).
    const { stdout } = await run(process.execPath, [attw, tarball, '--profile', 'esm-only', '--format', 'json'], { timeout: 120_000 });
    const { analysis } = JSON.parse(stdout) as {
      analysis: { problems: Array<{ kind: string; resolutionKind?: string }>; entrypoints: Record<string, { resolutions: Record<string, { resolution?: { fileName: string; isTypeScript: boolean } }> }> };
    };
    const { resolutions } = analysis.entrypoints['.']!;
    for (const kind of ['node16-esm', 'bundler']) {
      expect(resolutions[kind]?.resolution, kind).toMatchObject({ fileName: '/node_modules/@context-compiler/client/dist/index.d.ts', isTypeScript: true });
      expect(analysis.problems.filter((problem) => problem.resolutionKind === kind || problem.resolutionKind === undefined), kind).toEqual([]);
    }
  }, 150_000);

  it('carries what a registry page and provenance need: README, CHANGELOG, repository, homepage, bugs, publishConfig', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.trim().split('\n');
    expect(files).toEqual(expect.arrayContaining(['package/README.md', 'package/CHANGELOG.md', 'package/package.json', 'package/dist/index.js', 'package/dist/index.d.ts']));
    const manifest = JSON.parse(await readFile(join(CLIENT, 'package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest['repository']).toMatchObject({ type: 'git', directory: 'packages/client' });
    expect(String((manifest['repository'] as { url: string }).url)).toMatch(/^git\+https:\/\/github\.com\/[^/]+\/[^/]+\.git$/);
    expect(manifest['homepage']).toMatch(/^https:\/\//);
    expect(manifest['bugs']).toMatchObject({ url: expect.stringMatching(/^https:\/\//) });
    // `npm publish --provenance` needs a public scoped package; the attestation names the repository above.
    expect(manifest['publishConfig']).toEqual({ access: 'public', provenance: true });
    const changelog = await readFile(join(CLIENT, 'CHANGELOG.md'), 'utf8');
    expect(changelog).toContain(`## ${manifest['version'] as string}`);
  });
});

describe('which service the client was built for', () => {
  it('is the service’s own major version', async () => {
    const { version } = JSON.parse(await readFile(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string };
    expect(SERVICE_MAJOR).toBe(Number(version.split('.')[0]));
  });

  it('warns once through its logger when the service is of another major, and never for the service it was built for', async () => {
    const warnings: Array<{ message: string; details?: Record<string, unknown> }> = [];
    const logger = { warn: (message: string, details?: Record<string, unknown>) => warnings.push({ message, ...(details ? { details } : {}) }) };

    // The real service: its release is of the client's major.
    const { app } = await buildTestApp();
    await app.listen({ port: 0, host: '127.0.0.1' });
    const current = createClient({ baseUrl: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, logger });
    onTestFinished(() => current.close());
    await current.health();
    await current.context('mars', { now: '2026-11-30T17:05:00Z' });
    expect(warnings).toEqual([]);

    // A service one major ahead (a stand-in answering as a later release would), called thrice, a failure among them.
    const later = `${SERVICE_MAJOR + 1}.0.0`;
    const server = createServer((request, response) => {
      response.setHeader('x-context-compiler-version', later);
      if (request.url === '/healthz') response.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      else response.writeHead(404, { 'content-type': 'application/problem+json' }).end('{"code":"CC_ROUTE_NOT_FOUND","status":404}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const ahead = createClient({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, logger });
    onTestFinished(() => ahead.close());
    await ahead.health();
    await ahead.health();
    await expect(ahead.personas()).rejects.toMatchObject({ status: 404 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toContain(later);
    expect(warnings[0]!.details).toEqual({ serviceVersion: later, builtForMajor: SERVICE_MAJOR });
  });
});
