/**
 * The client package as a voice server gets it: `npm pack` of packages/client, installed
 * into an empty project from the tarball with nothing but the npm cache (`--offline`: no
 * network), measured, type-checked as a consumer would, and run against a real server —
 * the README's voice server (examples/connect.ts) among it, built and run from the install.
 * The same tarball as the registry would get it, checked by the tools integrators trust —
 * publint (package.json against the packed files) and @arethetypeswrong/cli (its types as
 * TypeScript resolves them) — offline; its publishing metadata; and the one version rule it
 * keeps with the service. Also the image's own install: the Dockerfile's runtime `npm ci`,
 * which must keep working now that the root is an npm workspace.
 */
import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { copyFile, lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { publint } from 'publint';
import { formatMessage } from 'publint/utils';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createClient, SERVICE_MAJOR } from '@context-compiler/client';
import { PROJECT_ROOT } from '../../src/config.js';
import { buildTestApp, tempDir, TEST_TOKEN } from '../helpers/app.js';

const run = promisify(execFile);
const CLIENT = join(PROJECT_ROOT, 'packages/client');

/**
 * What a child npm is given: PATH, HOME (its cache) and every npm_config_* setting (the
 * registry, cache, proxy or CA a CI machine configures that way, which an install needs),
 * but none of the npm_package_* or npm_lifecycle_* variables an enclosing `npm test` sets,
 * which would point the child at this project instead of `cwd`.
 */
function npmEnvironment(env: NodeJS.ProcessEnv): Record<string, string> {
  const settings = Object.entries(env).filter((entry): entry is [string, string] => /^npm_config_/i.test(entry[0]) && entry[1] !== undefined);
  return { PATH: env['PATH'] ?? '', HOME: env['HOME'] ?? '', ...Object.fromEntries(settings) };
}

const npm = (args: string[], cwd: string, env: NodeJS.ProcessEnv = process.env) =>
  run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, timeout: 120_000, env: npmEnvironment(env) });

/**
 * The package packed once for every test here, as a release would: `npm pack` runs its prepack
 * (its build), about 5 s of CPU.
 */
let tarball: string;
let packDir: string;

beforeAll(async () => {
  packDir = await mkdtemp(join(tmpdir(), 'cc-client-pack-'));
  await npm(['pack', '--workspace', '@context-compiler/client', '--pack-destination', packDir], PROJECT_ROOT);
  tarball = join(packDir, (await readdir(packDir)).find((name) => name.endsWith('.tgz'))!);
}, 180_000);

afterAll(() => rm(packDir, { recursive: true, force: true }));

/** Bytes of every file under `dir`, symbolic links not followed. */
async function treeBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) total += await treeBytes(path);
    else total += (await lstat(path)).size;
  }
  return total;
}

/** The root lockfile's entry for a package: the exact version and integrity the service was tested with. */
async function lockedEntry(name: string): Promise<Record<string, unknown>> {
  const lock = JSON.parse(await readFile(join(PROJECT_ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, Record<string, unknown>> };
  const entry = lock.packages[`node_modules/${name}`];
  if (!entry) throw new Error(`${name} is not in package-lock.json`);
  return entry;
}

/** A directory for an install of some 6,000 files, removed after the test (on a tmpfs when the run has one: test/helpers/tmpdir-setup.ts). */
async function installDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  onTestFinished(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

const CONSUMER = `import { ContextCompilerError, createClient, type FallbackEvent, type GeminiSetup, type RealtimeSession, type Tool } from '@context-compiler/client';

const fallbacks: FallbackEvent[] = [];
const api = createClient({ baseUrl: 'http://127.0.0.1:8080', realtime: { budgetMs: 800, onFallback: (event) => fallbacks.push(event) } });
// realtimeSession() never throws: the session to send, and how it was made.
const connected = await api.realtimeSession('venus', { topicId: 'real-estate' }, { requestId: 'call-1', defaultPersona: 'mars' });
const sent: RealtimeSession = connected.session;
const from: 'service' | 'stale' | 'static' = connected.source;
const told: string = connected.instructionsSha256;
const kept = createClient({ baseUrl: 'http://127.0.0.1:8080', maxBodyBytes: 1 << 20, realtime: { lastKnownGoodFile: '/var/lib/voice/last-known-good.json', staleMaxAgeMs: 3_600_000 } });
// @ts-expect-error where sessions are kept is the client's, not a call's.
void kept.realtimeSession('venus', {}, { lastKnownGoodFile: '/tmp/x' });
// @ts-expect-error only a persona with a static session can be the default.
void api.realtimeSession('venus', {}, { defaultPersona: 'jupiter' });
const mars = await api.context('mars', { topicId: 'real-estate' });
// The common path: the answer itself, nothing to narrow.
// A persona answer holds a session for OpenAI and Azure, a setup for Gemini: one of them.
const session: RealtimeSession | undefined = mars.session;
const names: string[] = (mars.session?.tools ?? []).map((tool: Tool) => tool.name);
const voice: string = session?.audio.output.voice ?? mars.voice;
// geminiSetup() is realtimeSession()'s twin: the setup to send, and how it was made.
const gemini: GeminiSetup = (await api.geminiSetup('mars', { topicId: 'real-estate' })).setup;
const voiceName: string = gemini.generationConfig.speechConfig.voiceConfig.prebuiltVoiceConfig.voiceName;
// @ts-expect-error systemPrompt is a string, so the package's types are real types, not any.
const wrong: number = mars.systemPrompt;
const again = await api.contextIfChanged('mars', mars.etag);
// @ts-expect-error the conditional form is a union: narrow it first.
void again.systemPrompt;
if (!('notModified' in again)) void again.systemPrompt;
// @ts-expect-error compile() takes the request the route accepts.
void api.compile({ phase: 'later', surface: 'chat', worker: 'scribe' });
export { names, voice, voiceName, wrong, sent, from, told, ContextCompilerError };
`;

const SCRIPT = `import { ContextCompilerError, createClient } from '@context-compiler/client';

// Budgets a loaded machine never comes near: this is about the package, not the budget.
const api = createClient({ baseUrl: process.env.CC_URL, token: process.env.CC_TOKEN, timeoutMs: 60000, realtime: { budgetMs: 60000 } });
try {
  const { session, source } = await api.realtimeSession('mars', { topicId: 'real-estate' });
  const down = createClient({ baseUrl: 'http://127.0.0.1:9', realtime: { budgetMs: 500 } });
  const fallback = await down.realtimeSession('venus', { now: '2026-11-30T17:30:00Z' });
  await down.close();
  const venus = await api.context('venus', { now: '2026-11-30T17:30:00Z' });
  const again = await api.contextIfChanged('venus', venus.etag, { now: '2026-11-30T17:30:00Z' });
  let missing = null;
  try {
    await api.context('jupiter');
  } catch (error) {
    if (error instanceof ContextCompilerError) missing = { status: error.status, code: error.code };
  }
  process.stdout.write(JSON.stringify({ session, source, fallback, venusRunId: venus.runId, venusInstructions: venus.systemPrompt, again, missing }));
} finally {
  await api.close();
}
`;

describe('the npm the package tests spawn', () => {
  it('keeps the npm_config_* settings it runs under (a CI registry or cache), not the enclosing npm run’s package variables', async () => {
    const dir = await tempDir('cc-npm-env-');
    const env = {
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      npm_config_registry: 'http://127.0.0.1:9/ci-mirror/',
      NPM_CONFIG_FUND: 'false',
      npm_package_name: 'context-compiler',
      npm_lifecycle_event: 'test',
    };
    expect(Object.keys(npmEnvironment(env)).sort()).toEqual(['HOME', 'NPM_CONFIG_FUND', 'PATH', 'npm_config_registry']);
    const { stdout } = await npm(['config', 'get', 'registry'], dir, env);
    expect(stdout.trim()).toBe('http://127.0.0.1:9/ci-mirror/');
  }, 60_000);
});

describe('the client package', () => {
  it('regression: the documented install line works today (the package is not published: `npm install @context-compiler/client` failed)', async () => {
    // The line both READMEs give, run as given: packed from this repository, installed from the tarball.
    // Regression: --pack-destination into a folder that did not exist failed; the folder is made first.
    const install = ['mkdir -p ../voice-server && npm ci && npm pack --workspace @context-compiler/client --pack-destination ../voice-server', 'npm install ./context-compiler-client-0.1.0.tgz'];
    for (const readme of ['README.md', 'packages/client/README.md', 'docs/voice-server.md']) {
      const text = await readFile(join(PROJECT_ROOT, readme), 'utf8');
      for (const line of install) expect(text, readme).toContain(line);
      expect(text, readme).not.toMatch(/^npm install @context-compiler\/client\b/m);
      // Regression: the examples named a host that resolves only inside compose; they take CONTEXT_COMPILER_URL, else loopback.
      expect(text, readme).not.toContain("'http://context-compiler:8080'");
    }
  });

  it('installs alone from its tarball — itself and undici, no zod, no server — type-checks for a consumer and talks to a real server', async () => {
    const dir = await tempDir('cc-client-package-');
    // The documented install: `npm pack` in this repository, into the voice server's project (the
    // file's one pack, copied there), then `npm install ./<tarball>` there. npm's cache holds the undici
    // tarball the root install fetched, not the registry metadata a version range needs offline, so the
    // empty project's lockfile names undici's exact version and integrity, as a real project's would;
    // online no lockfile is needed.
    const project = join(dir, 'voice-server');
    await mkdir(project);
    expect(basename(tarball)).toBe('context-compiler-client-0.1.0.tgz');
    await copyFile(tarball, join(project, basename(tarball)));
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'voice-server', version: '1.0.0', private: true, type: 'module' }));
    await writeFile(
      join(project, 'package-lock.json'),
      JSON.stringify({
        name: 'voice-server',
        version: '1.0.0',
        lockfileVersion: 3,
        requires: true,
        packages: { '': { name: 'voice-server', version: '1.0.0' }, 'node_modules/undici': await lockedEntry('undici') },
      }),
    );
    await npm(['install', `./${basename(tarball)}`, '--offline', '--ignore-scripts'], project);
    expect(JSON.parse(await readFile(join(project, 'package.json'), 'utf8')).dependencies).toEqual({ '@context-compiler/client': `file:${basename(tarball)}` });

    const { stdout: tree } = await npm(['ls', '--all', '--parseable'], project);
    const installed = tree
      .trim()
      .split('\n')
      .slice(1)
      .map((path) => path.slice(join(project, 'node_modules').length + 1));
    expect(installed).toEqual(['@context-compiler/client', 'undici']);
    const bytes = await treeBytes(join(project, 'node_modules'));
    expect(bytes).toBeLessThan(3 * 1024 * 1024);
    const client = join(project, 'node_modules/@context-compiler/client');
    expect((await readdir(join(client, 'dist'))).sort()).toEqual(
      ['catch-up', 'clock', 'compatibility', 'errors', 'fallback-counts', 'gemini-live', 'index', 'last-known-good', 'realtime', 'refresh', 'static-sessions', 'transport', 'types'].flatMap((name) => [`${name}.d.ts`, `${name}.js`]),
    );
    const declarations = (await Promise.all(['index', 'types', 'errors', 'last-known-good', 'realtime', 'static-sessions', 'clock', 'transport', 'compatibility', 'catch-up', 'gemini-live', 'refresh', 'fallback-counts'].map((name) => readFile(join(client, `dist/${name}.d.ts`), 'utf8')))).join('\n');
    expect(declarations).not.toMatch(/from '(zod|undici|node:[^']+)'/);

    // A consumer's TypeScript compiles against the published declarations (strict, as shipped).
    await writeFile(join(project, 'consumer.ts'), CONSUMER);
    await writeFile(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          outDir: 'out',
          skipLibCheck: true,
          typeRoots: [join(PROJECT_ROOT, 'node_modules/@types')],
          types: ['node'],
        },
        files: ['consumer.ts', 'connect-example.ts'],
      }),
    );
    // The README's voice server (examples/connect.ts) as a voice server's own file: it compiles against the installed package too.
    await writeFile(join(project, 'connect-example.ts'), await readFile(join(PROJECT_ROOT, 'examples/connect.ts'), 'utf8'));
    await run(process.execPath, [join(PROJECT_ROOT, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: project, timeout: 120_000 });

    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    await writeFile(join(project, 'connect.mjs'), SCRIPT);
    const { stdout } = await run(process.execPath, ['connect.mjs'], { cwd: project, timeout: 60_000, env: { PATH: process.env['PATH'] ?? '', CC_URL: baseUrl, CC_TOKEN: TEST_TOKEN } });
    const answer = JSON.parse(stdout) as {
      session: { type: string; instructions: string; audio: { output: { voice: string } }; tools: Array<{ type: string; name: string }> };
      source: string;
      fallback: { session: { instructions: string; audio: { output: { voice: string } } }; source: string; fallback: string };
      venusRunId: string;
      venusInstructions: string;
      again: unknown;
      missing: unknown;
    };
    expect(answer.session).toMatchObject({ type: 'realtime', audio: { output: { voice: 'ash' } } });
    expect(answer.session.tools.map((tool) => tool.name)).toEqual(['search', 'query', 'get_page', 'read_article']);
    expect(answer.session.instructions).toContain('real-estate');
    expect(answer.source).toBe('service');
    // The installed package carries its static sessions: a call connects with the service down.
    expect(answer.fallback).toMatchObject({ source: 'static', fallback: 'network', session: { audio: { output: { voice: 'coral' } } } });
    expect(answer.fallback.session.instructions).toContain('You are Venus');
    expect(answer.fallback.session.instructions.endsWith('Current date and time: Monday 30 November 2026, 17:30 (UTC, UTC+00:00)')).toBe(true);
    expect(answer.venusInstructions).toContain('You are Venus');
    expect(answer.again).toMatchObject({ notModified: true });
    expect(answer.missing).toEqual({ status: 404, code: 'CC_NOT_FOUND' });
    const trace = await app.inject({ url: `/runs/${answer.venusRunId}/trace`, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(trace.statusCode).toBe(200);

    // The example, run as built from the installed package: it connects a call through a local stand-in for the realtime calls endpoint.
    const calls: string[] = [];
    const realtime = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        calls.push(Buffer.concat(chunks).toString('utf8'));
        response.writeHead(201, { 'content-type': 'application/sdp', location: '/v1/realtime/calls/rtc_packed' }).end('v=0 packed answer');
      });
    });
    await new Promise<void>((resolve) => realtime.listen(0, '127.0.0.1', resolve));
    onTestFinished(() => new Promise<void>((resolve) => realtime.close(() => resolve())));
    const callsUrl = `http://127.0.0.1:${(realtime.address() as AddressInfo).port}/v1/realtime/calls`;
    await writeFile(join(project, 'run-example.mjs'), "import { connect } from './out/connect-example.js';\nprocess.stdout.write(await connect('v=0 offer', 'mars', 'real-estate', 'call-packed-1'));\n");
    const example = await run(process.execPath, ['run-example.mjs'], {
      cwd: project,
      timeout: 60_000,
      env: { PATH: process.env['PATH'] ?? '', CONTEXT_COMPILER_URL: baseUrl, CONTEXT_COMPILER_TOKEN: TEST_TOKEN, OPENAI_API_KEY: 'sk-test', REALTIME_CALLS_URL: callsUrl },
    });
    expect(example.stdout.endsWith('v=0 packed answer')).toBe(true);
    expect(JSON.parse(example.stdout.split('\n')[0]!)).toMatchObject({ msg: 'call connected', callId: 'call-packed-1', persona: 'mars', source: 'service', runId: 'call-packed-1' });
    expect(calls).toHaveLength(1);
    expect(calls[0]).toContain('"type":"realtime"');
    expect(calls[0]).toContain('"model":"gpt-realtime-2"');
    expect(calls[0]).toContain('v=0 offer');
    const call = await app.inject({ url: '/runs/call-packed-1/trace', headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(call.json()).toMatchObject({ events: [{ outcome: 'delivered' }] });
  }, 240_000);

  it('leaves the image’s install alone: the Dockerfile’s runtime npm ci installs the service’s production dependencies and no workspace', async () => {
    const dockerfile = await readFile(join(PROJECT_ROOT, 'Dockerfile'), 'utf8');
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    const command = /^RUN (npm ci [^&\n]*)/m.exec(runtime)?.[1]?.trim();
    expect(command).toMatch(/--omit=dev/);
    // What the runtime stage copies before it installs: the manifest and the lockfile, nothing else.
    const dir = await installDir('cc-image-install-');
    for (const file of ['package.json', 'package-lock.json']) await writeFile(join(dir, file), await readFile(join(PROJECT_ROOT, file)));
    const [, ...args] = command!.split(/\s+/);
    await npm([...args, '--offline'], dir);
    const modules = await readdir(join(dir, 'node_modules'));
    expect(modules).toEqual(expect.arrayContaining(['fastify', 'undici', 'zod', 'pg']));
    expect(modules).not.toContain('@context-compiler');
    expect(modules).not.toContain('typescript');
  }, 240_000);
});

describe('the packed client package, as the registry would get it', () => {
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
