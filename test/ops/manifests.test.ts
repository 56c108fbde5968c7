import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { ConfigError, DESCRIPTORS_BESIDES_SOCKETS, loadConfig, parseDuration, PROJECT_ROOT, SHUTDOWN_FLUSH_MS } from '../../src/config.js';
import { buildTestApp, tempDir, TEST_TOKEN } from '../helpers/app.js';
import { runHealthcheck } from './run-healthcheck.js';

// Static checks of the packaging (no Docker needed): the image, compose and Kubernetes
// manifests must point at routes the app serves and keep the security settings we rely on.

interface Instruction {
  keyword: string;
  flags: Record<string, string>;
  args: string;
}
interface Stage {
  image: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** Enough of the Dockerfile grammar for our own file: comments, continuations, flags, stages. */
function parseDockerfile(text: string): Stage[] {
  const logical: string[] = [];
  let pending = '';
  for (const line of text.split('\n')) {
    if (/^\s*#/.test(line)) continue;
    const trimmed = line.trimEnd();
    if (trimmed.endsWith('\\')) {
      pending += `${trimmed.slice(0, -1)} `;
      continue;
    }
    const full = (pending + trimmed).trim();
    pending = '';
    if (full) logical.push(full);
  }
  const stages: Stage[] = [];
  for (const line of logical) {
    const [, keyword = '', rest = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const flags: Record<string, string> = {};
    let args = rest;
    for (let flag = /^--([\w-]+)=(\S+)\s*/.exec(args); flag; flag = /^--([\w-]+)=(\S+)\s*/.exec(args)) {
      flags[flag[1]!] = flag[2]!;
      args = args.slice(flag[0].length);
    }
    const instruction = { keyword: keyword.toUpperCase(), flags, args };
    if (instruction.keyword === 'FROM') {
      const [image = '', , name] = args.split(/\s+/);
      stages.push({ image, name, instructions: [] });
    } else {
      stages.at(-1)!.instructions.push(instruction);
    }
  }
  return stages;
}

function all(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((instruction) => instruction.keyword === keyword);
}

function env(stage: Stage): Record<string, string> {
  return Object.fromEntries(
    all(stage, 'ENV').flatMap(({ args }) => args.split(/\s+/).map((pair) => pair.split('=') as [string, string])),
  );
}

/** Absolute destinations of the stage's COPY instructions, resolved against WORKDIR. */
function copies(stage: Stage): Array<{ from: string | undefined; source: string; destination: string }> {
  let workdir = '/';
  const result = [];
  for (const instruction of stage.instructions) {
    if (instruction.keyword === 'WORKDIR') workdir = posix.resolve(workdir, instruction.args);
    if (instruction.keyword !== 'COPY') continue;
    const parts = instruction.args.split(/\s+/);
    const raw = parts.at(-1)!;
    const destination = posix.resolve(workdir, raw);
    for (const source of parts.slice(0, -1)) {
      const target = parts.length > 2 || raw.endsWith('/') ? posix.join(destination, posix.basename(source)) : destination;
      result.push({ from: instruction.flags['from'], source, destination: target });
    }
  }
  return result;
}

function workdirOf(stage: Stage): string {
  return all(stage, 'WORKDIR').reduce((dir, { args }) => posix.resolve(dir, args), '/');
}

/** True when `path` lies at or under one of the copied destinations. */
function isCopied(stage: Stage, path: string): boolean {
  return copies(stage).some(({ destination }) => path === destination || path.startsWith(`${destination}/`));
}

const read = (path: string) => readFile(join(PROJECT_ROOT, path), 'utf8');
const exists = (path: string) => stat(join(PROJECT_ROOT, path)).then(
  () => true,
  () => false,
);

async function dockerfile() {
  const stages = parseDockerfile(await read('Dockerfile'));
  const runtime = stages.at(-1)!;
  return { stages, build: stages[0]!, runtime, env: env(runtime), workdir: workdirOf(runtime) };
}

function execForm(args: string): string[] {
  return JSON.parse(args.replace(/^CMD\s+/, '')) as string[];
}

async function healthcheckCommand(runtime: Stage): Promise<string[]> {
  const [healthcheck] = all(runtime, 'HEALTHCHECK');
  expect(healthcheck, 'the runtime stage has a HEALTHCHECK').toBeDefined();
  return execForm(healthcheck!.args);
}

type K8sObject = { kind: string; apiVersion: string; metadata: { name: string }; spec: any };

/** What `kubectl apply -k <dir>` would apply, for the features our kustomizations use: resources (files and directories) and strategic-merge patches. */
async function render(dir: string): Promise<{ objects: K8sObject[]; kustomization: any; files: string[] }> {
  const kustomization = parse(await readFile(join(dir, 'kustomization.yaml'), 'utf8'));
  const objects: K8sObject[] = [];
  for (const resource of kustomization.resources as string[]) {
    const path = join(dir, resource);
    if ((await stat(path)).isDirectory()) {
      objects.push(...(await render(path)).objects);
      continue;
    }
    for (const document of parseAllDocuments(await readFile(path, 'utf8'))) {
      expect(document.errors, path).toEqual([]);
      objects.push(document.toJS() as K8sObject);
    }
  }
  for (const { path } of (kustomization.patches ?? []) as Array<{ path: string }>) {
    const patch = parse(await readFile(join(dir, path), 'utf8')) as K8sObject;
    const target = objects.find((object) => object.kind === patch.kind && object.metadata.name === patch.metadata.name);
    expect(target, `${path} patches ${patch.kind}/${patch.metadata.name}`).toBeDefined();
    Object.assign(target!, merge(target, patch));
  }
  return { objects, kustomization, files: (await readdir(dir)).filter((name) => name.endsWith('.yaml')).sort() };
}

/** Kubernetes' strategic merge for what our patches touch: lists of named things (containers, env, volumes) or mounts merge by key. */
function merge(base: any, patch: any): any {
  if (Array.isArray(base) && Array.isArray(patch)) {
    const key = ['name', 'mountPath'].find((field) => patch.every((item) => item && typeof item === 'object' && field in item));
    if (!key) return patch;
    const merged = [...base];
    for (const item of patch) {
      const at = merged.findIndex((existing) => existing?.[key] === item[key]);
      if (at === -1) merged.push(item);
      else merged[at] = merge(merged[at], item);
    }
    return merged;
  }
  if (base && patch && typeof base === 'object' && typeof patch === 'object' && !Array.isArray(base) && !Array.isArray(patch)) {
    const merged = { ...base };
    for (const [field, value] of Object.entries(patch)) merged[field] = field in base ? merge(base[field], value) : value;
    return merged;
  }
  return patch;
}

const OVERLAYS = { postgres: 'docker/k8s', 'shared-volume': 'docker/k8s/shared-volume' } as const;
type Overlay = keyof typeof OVERLAYS;

async function k8sObjects(overlay: Overlay = 'postgres'): Promise<{ files: string[]; objects: K8sObject[]; kustomization: any }> {
  return render(join(PROJECT_ROOT, OVERLAYS[overlay]));
}

function one(objects: K8sObject[], kind: string): K8sObject {
  const found = objects.filter((object) => object.kind === kind);
  expect(found, kind).toHaveLength(1);
  return found[0]!;
}

async function deployment(overlay: Overlay = 'postgres') {
  const { objects } = await k8sObjects(overlay);
  const object = one(objects, 'Deployment');
  const pod = object.spec.template.spec;
  expect(pod.containers).toHaveLength(1);
  const container = pod.containers[0];
  const containerEnv: Record<string, string> = Object.fromEntries(container.env.map((entry: any) => [entry.name, entry.value]));
  return { objects, object, pod, container, env: containerEnv };
}

/** Compose's `${VAR}`, `${VAR:-default}` and `${VAR:?message}` against `vars`. */
function interpolate(text: string, vars: Record<string, string>): string {
  return text.replace(/\$\{([A-Z_]+)(?::([-?])([^}]*))?\}/g, (_match, name: string, operator?: string, rest?: string) => {
    const value = vars[name];
    if (value !== undefined && value !== '') return value;
    if (operator === '?') throw new Error(rest);
    return operator === '-' ? (rest ?? '') : '';
  });
}

const COMPOSE_FILES = ['docker/compose.yaml', 'docker/compose.files.yaml'] as const;

async function composeService(file: (typeof COMPOSE_FILES)[number] = 'docker/compose.yaml') {
  const document = parse(await read(file));
  return { document, service: document.services['context-compiler'] };
}

describe('Dockerfile', () => {
  it('builds on node:24-slim (the current LTS) in one stage and runs production dependencies only in another', async () => {
    const { stages, build, runtime } = await dockerfile();
    expect(stages.length).toBeGreaterThanOrEqual(2);
    for (const stage of stages) expect(stage.image).toBe('node:24-slim');
    const buildRuns = all(build, 'RUN').map(({ args }) => args);
    expect(buildRuns.some((run) => /\bnpm ci\b/.test(run))).toBe(true);
    expect(buildRuns.some((run) => /\bnpm run build\b/.test(run))).toBe(true);
    const runtimeRuns = all(runtime, 'RUN').map(({ args }) => args);
    expect(runtimeRuns.some((run) => /\bnpm ci\b[^&]*--omit=dev/.test(run))).toBe(true);
    expect(runtimeRuns.join(' ')).not.toMatch(/npm (install|run build)/);
    expect(copies(runtime).some(({ from, source }) => from === build.name && source === '/app/dist')).toBe(true);
  });

  it('copies everything the server reads at boot into the runtime stage', async () => {
    const { runtime, workdir } = await dockerfile();
    // The contract's version comes from package.json (src/http/openapi.ts); examples/brain is the default brain.
    for (const path of ['examples/brain', 'package.json', 'package-lock.json', 'dist/src/server.js']) {
      expect(isCopied(runtime, posix.join(workdir, path)), path).toBe(true);
    }
    for (const { from, source } of copies(runtime)) {
      if (from === undefined) expect(await exists(source), source).toBe(true);
    }
  });

  it('runs node (not npm) as the non-root node user on the compiled server', async () => {
    const { runtime } = await dockerfile();
    const users = all(runtime, 'USER').map(({ args }) => args);
    expect(users.at(-1)).toBe('node');
    const keywords = runtime.instructions.map(({ keyword }) => keyword);
    expect(keywords.lastIndexOf('USER')).toBeLessThan(keywords.lastIndexOf('CMD'));
    const cmd = execForm(all(runtime, 'CMD').at(-1)!.args);
    expect(cmd).toEqual(['node', 'dist/src/server.js']);
    // tsc maps src/server.ts to dist/src/server.js only with rootDir "." and outDir "dist".
    const tsconfig = JSON.parse(await read('tsconfig.json'));
    expect([tsconfig.compilerOptions.rootDir, tsconfig.compilerOptions.outDir]).toEqual(['.', 'dist']);
    expect(await exists('src/server.ts')).toBe(true);
  });

  it('listens on 0.0.0.0 at the exposed port, and only starts with a token', async () => {
    const { runtime, env: imageEnv } = await dockerfile();
    expect(imageEnv).toMatchObject({ HOST: '0.0.0.0', PORT: '8080', NODE_ENV: 'production' });
    expect(all(runtime, 'EXPOSE').map(({ args }) => args)).toEqual([imageEnv['PORT']]);
    expect(() => loadConfig(imageEnv)).toThrow(ConfigError);
    expect(() => loadConfig(imageEnv)).toThrow(/CONTEXT_COMPILER_TOKENS/);
    const config = loadConfig({ ...imageEnv, CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    expect([config.host, config.port]).toEqual(['0.0.0.0', 8080]);
  });

  it('declares no VOLUME (with PostgreSQL traces it writes nothing), and prepares TRACE_DIR, owned by node, for the volume a files setup mounts', async () => {
    const { runtime, env: imageEnv } = await dockerfile();
    // Where the files backend is chosen (compose.files.yaml, the shared-volume overlay) the volume is declared.
    expect(all(runtime, 'VOLUME')).toEqual([]);
    const traceDir = imageEnv['TRACE_DIR']!;
    expect(traceDir).toMatch(/^\//);
    // A new named volume mounted there takes this owner and mode, so it is writable on a read-only root.
    const runs = all(runtime, 'RUN').map(({ args }) => args).join('\n');
    expect(runs).toContain(`mkdir -p ${traceDir}`);
    expect(runs).toMatch(/chown -R node:node/);
    expect(runs).toContain(`chmod 0700 ${traceDir}`);
  });

  it('health-checks with the node script it copies in, not curl', async () => {
    const { runtime, workdir } = await dockerfile();
    const command = await healthcheckCommand(runtime);
    expect(command[0]).toBe('node');
    expect(command.join(' ')).not.toMatch(/curl|wget/);
    expect(isCopied(runtime, posix.resolve(workdir, command[1]!))).toBe(true);
    expect(await exists(command[1]!)).toBe(true);
    const [healthcheck] = all(runtime, 'HEALTHCHECK');
    expect(parseDuration(healthcheck!.flags['timeout'] ?? '30s')).toBeLessThanOrEqual(10_000);
  });

  it("HEALTHCHECK's script, run with the image's environment, finds a public route the app serves", async () => {
    const { runtime, env: imageEnv } = await dockerfile();
    const command = await healthcheckCommand(runtime);
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    const run = await runHealthcheck({ HOST: imageEnv['HOST']!, PORT: String(port) });
    expect(command[1]).toBe('docker/healthcheck.mjs');
    expect(run.code).toBe(0);
    const path = new URL(/http:\S+/.exec(run.stdout)![0]).pathname;
    expect(app.routeTable()).toContainEqual({ method: 'GET', url: path });
  });

  it('.dockerignore keeps secrets, build output and dependencies out of the build context', async () => {
    const ignored = (await read('.dockerignore')).split('\n').map((line) => line.trim());
    for (const entry of ['.git', 'node_modules', 'dist', 'var', '**/.env']) expect(ignored).toContain(entry);
  });
});

describe('docker/compose.yaml', () => {
  it('mounts the brain read-only and sends traces to its PostgreSQL service, started healthy first', async () => {
    const { document, service } = await composeService();
    const brain = service.volumes.find((volume: any) => volume.target === service.environment.BRAIN_ROOT);
    expect(brain).toMatchObject({ type: 'bind', read_only: true, source: '${BRAIN_DIR:-../examples/brain}' });
    expect(await exists('examples/brain/SOUL.md')).toBe(true);
    expect(service.volumes).toHaveLength(1);
    const database = document.services.postgres;
    const url = new URL(interpolate(service.environment.TRACE_DATABASE_URL, { POSTGRES_PASSWORD: 'pw0123' }));
    expect([url.protocol, url.hostname, url.port, url.username, url.password, url.pathname]).toEqual([
      'postgres:',
      'postgres',
      '5432',
      database.environment.POSTGRES_USER,
      'pw0123',
      `/${database.environment.POSTGRES_DB}`,
    ]);
    expect(interpolate(database.environment.POSTGRES_PASSWORD, { POSTGRES_PASSWORD: 'pw0123' })).toBe('pw0123');
    // Without a password, compose refuses to start, saying which variable to set.
    expect(() => interpolate(service.environment.TRACE_DATABASE_URL, {})).toThrow(/set POSTGRES_PASSWORD in docker\/.env/);
    expect(service.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(database.healthcheck.test).toContain('pg_isready');
    expect(database.ports).toBeUndefined();
    const data = database.volumes.find((volume: any) => volume.target === '/var/lib/postgresql/data');
    expect(Object.keys(document.volumes)).toContain(data.source);
  });

  it('takes tokens from an ignored env file whose committed example refuses to start as is', async () => {
    const { service } = await composeService();
    const { env: imageEnv } = await dockerfile();
    expect(service.env_file).toBe('.env');
    expect((await read('docker/.gitignore')).split('\n')).toContain('.env');
    const example = Object.fromEntries(
      (await read('docker/.env.example'))
        .split('\n')
        .filter((line) => /^[A-Z_]+=/.test(line))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    expect(Object.keys(example)).toEqual(expect.arrayContaining(['CONTEXT_COMPILER_TOKENS', 'POSTGRES_PASSWORD']));
    expect(example['POSTGRES_PASSWORD']).toBe('');
    const environment = Object.fromEntries(Object.entries(service.environment).map(([key, value]) => [key, interpolate(String(value), { POSTGRES_PASSWORD: 'pw0123' })]));
    const containerEnv = { ...imageEnv, ...example, ...environment };
    expect(() => loadConfig(containerEnv)).toThrow(/CONTEXT_COMPILER_TOKENS/);
    const config = loadConfig({ ...containerEnv, CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    expect(config.brainRoot).toBe('/brain');
    expect(config.traceDatabaseUrl).toMatch(/^postgres:\/\/context_compiler:pw0123@postgres:5432\/traces$/);
  });
});

describe.each(COMPOSE_FILES)('%s', (file) => {
  it('runs read-only, unprivileged, with /tmp on tmpfs', async () => {
    const { service } = await composeService(file);
    expect(service.read_only).toBe(true);
    expect(service.tmpfs.some((entry: string) => entry.split(':')[0] === '/tmp')).toBe(true);
    expect(service.cap_drop).toEqual(['ALL']);
    expect(service.security_opt).toContain('no-new-privileges:true');
    expect(service.user).toBeUndefined(); // the image's USER node
    expect(service.privileged).toBeUndefined();
  });

  it('publishes the port the server listens on and health-checks like the image', async () => {
    const { service } = await composeService(file);
    const { runtime, env: imageEnv } = await dockerfile();
    expect(service.environment.PORT).toBe(imageEnv['PORT']);
    expect(service.ports.map((port: string) => port.split(':').at(-1))).toEqual([imageEnv['PORT']]);
    expect(service.healthcheck.test).toEqual(['CMD', ...(await healthcheckCommand(runtime))]);
    expect(parseDuration(service.stop_grace_period)).toBeGreaterThan(loadConfig({}).shutdownGraceMs + SHUTDOWN_FLUSH_MS);
  });

  it('sets an open-files limit that holds MAX_CONNECTIONS sockets and the files the service opens', async () => {
    const { service } = await composeService(file);
    const { env: imageEnv } = await dockerfile();
    const environment = Object.fromEntries(Object.entries(service.environment).map(([key, value]) => [key, interpolate(String(value), { POSTGRES_PASSWORD: 'pw0123' })]));
    const config = loadConfig({ ...imageEnv, ...environment, CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const { soft, hard } = service.ulimits.nofile;
    expect(soft).toBeGreaterThanOrEqual(config.maxConnections + DESCRIPTORS_BESIDES_SOCKETS);
    expect(hard).toBeGreaterThanOrEqual(soft);
  });
});

describe('docker/compose.files.yaml', () => {
  it('chooses trace files: no database, TRACE_DIR on a named volume, the only writable path besides /tmp', async () => {
    const { document, service } = await composeService('docker/compose.files.yaml');
    const { env: imageEnv } = await dockerfile();
    expect(Object.keys(document.services)).toEqual(['context-compiler']);
    expect(service.depends_on).toBeUndefined();
    const config = loadConfig({ ...imageEnv, ...service.environment, CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    expect(config.traceDatabaseUrl).toBeNull();
    expect(config.traceDir).toBe(imageEnv['TRACE_DIR']);
    const traces = service.volumes.find((volume: any) => volume.target === config.traceDir);
    expect(traces).toMatchObject({ type: 'volume', source: 'traces' });
    expect(traces.read_only).not.toBe(true);
    expect(Object.keys(document.volumes)).toEqual([traces.source]);
    const brain = service.volumes.find((volume: any) => volume.target === config.brainRoot);
    expect(brain).toMatchObject({ type: 'bind', read_only: true });
    expect(service.volumes.filter((volume: any) => volume.read_only !== true)).toEqual([traces]);
  });
});

describe('docker/k8s', () => {
  it('lists every manifest of each kustomization, and nothing that does not exist', async () => {
    for (const dir of ['docker/k8s', 'docker/k8s/base', 'docker/k8s/shared-volume', 'docker/k8s/monitoring']) {
      const kustomization = parse(await read(`${dir}/kustomization.yaml`));
      const listed = [...kustomization.resources, ...(kustomization.patches ?? []).map((patch: { path: string }) => patch.path)];
      for (const entry of listed) expect(await exists(posix.join(dir, entry)), `${dir}: ${entry}`).toBe(true);
      const files = (await readdir(join(PROJECT_ROOT, dir))).filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml');
      for (const file of files) expect(listed, `${dir}: ${file}`).toContain(file);
    }
  });

  it('keeps the brain in the pod: cloned by an init container, kept current by a sidecar, read-only to the service', async () => {
    const { pod, container, env: podEnv } = await deployment();
    const brainMount = container.volumeMounts.find((mount: any) => mount.mountPath === podEnv['BRAIN_ROOT']);
    expect(brainMount.readOnly).toBe(true);
    const volume = pod.volumes.find((entry: any) => entry.name === brainMount.name);
    expect(volume.emptyDir).toBeDefined();
    const writers = pod.initContainers.filter((init: any) => init.volumeMounts.some((mount: any) => mount.name === brainMount.name && mount.readOnly !== true));
    expect(writers.map((init: any) => init.name)).toEqual(['brain-clone', 'brain-sync']);
    // The sidecar runs beside the service (a native sidecar) and updates files in place: no symlink swap.
    expect(writers[1].restartPolicy).toBe('Always');
    expect(writers[1].command.join(' ')).toMatch(/reset --quiet --hard FETCH_HEAD/);
    for (const writer of writers) {
      expect(writer.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { drop: ['ALL'] } });
      expect(writer.image).toMatch(/^alpine\/git:\d+\.\d+\.\d+$/);
    }
    const repository = writers[0].env.find((entry: any) => entry.name === 'BRAIN_REPOSITORY');
    expect(repository.valueFrom.secretKeyRef).toEqual({ name: 'context-compiler-brain', key: 'repository' });
  });

  it('by default (PostgreSQL) runs stateless pods: no volume claim at all, the database URL from a Secret file', async () => {
    const { objects, pod, container, env: podEnv } = await deployment('postgres');
    expect(objects.filter((object) => object.kind === 'PersistentVolumeClaim')).toEqual([]);
    expect(pod.volumes.filter((entry: any) => entry.persistentVolumeClaim)).toEqual([]);
    expect(podEnv['TRACE_DATABASE_URL']).toBeUndefined();
    const file = podEnv['TRACE_DATABASE_URL_FILE']!;
    const mount = container.volumeMounts.find((entry: any) => file.startsWith(`${entry.mountPath}/`));
    expect(mount.readOnly).toBe(true);
    const secret = pod.volumes.find((entry: any) => entry.name === mount.name).secret;
    expect(secret.secretName).toBe('context-compiler-database');
    expect(secret.items.map((item: any) => posix.join(mount.mountPath, item.path))).toContain(file);
    // Nothing is writable but the memory-backed /tmp.
    const writable = container.volumeMounts.filter((entry: any) => entry.readOnly !== true).map((entry: any) => entry.mountPath);
    expect(writable).toEqual(['/tmp']);
  });

  it('ships a ServiceMonitor as an optional component (it needs the operator CRD) that scrapes /metrics with a token from a Secret', async () => {
    const component = parse(await read('docker/k8s/monitoring/kustomization.yaml'));
    expect(component).toMatchObject({ apiVersion: 'kustomize.config.k8s.io/v1alpha1', kind: 'Component' });
    for (const overlay of Object.keys(OVERLAYS) as Overlay[]) {
      const { objects, kustomization } = await k8sObjects(overlay);
      expect(objects.filter((object) => object.kind === 'ServiceMonitor'), overlay).toEqual([]);
      expect(kustomization.components ?? [], overlay).toEqual([]);
    }
    const monitor = parse(await read('docker/k8s/monitoring/servicemonitor.yaml'));
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    const service = one((await k8sObjects()).objects, 'Service') as K8sObject & { metadata: { labels: Record<string, string> } };
    for (const [label, value] of Object.entries(monitor.spec.selector.matchLabels)) expect(service.metadata.labels[label]).toBe(value);
    const [endpoint] = monitor.spec.endpoints;
    expect(service.spec.ports.map((port: any) => port.name)).toContain(endpoint.port);
    expect(endpoint.path).toBe('/metrics');
    expect(endpoint.authorization).toEqual({ type: 'Bearer', credentials: { name: 'context-compiler-metrics-token', key: 'token' } });
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    expect((await app.inject('/metrics')).statusCode).toBe(401);
    expect((await app.inject({ url: '/metrics', headers: { authorization: `Bearer ${TEST_TOKEN}` } })).statusCode).toBe(200);
  });

  it('ships a Prometheus job that reads its bearer token from a file and scrapes the compose service', async () => {
    const config = parse(await read('docker/prometheus/prometheus.yml'));
    const [job] = config.scrape_configs;
    expect(job.metrics_path).toBe('/metrics');
    expect(job.authorization.type).toBe('Bearer');
    expect(job.authorization.credentials_file).toMatch(/^\//);
    expect(job.authorization.credentials).toBeUndefined();
    const { service } = await composeService();
    const port = service.ports[0].split(':').at(-1);
    expect(job.static_configs[0].targets).toEqual([`context-compiler:${port}`]);
  });

  it('in the shared-volume overlay, puts TRACE_DIR on a writable ReadWriteMany claim', async () => {
    const { objects, pod, container, env: podEnv } = await deployment('shared-volume');
    expect(podEnv['TRACE_DATABASE_URL_FILE']).toBeUndefined();
    const traceDir = podEnv['TRACE_DIR']!;
    const traces = container.volumeMounts.find((mount: any) => traceDir === mount.mountPath || traceDir.startsWith(`${mount.mountPath}/`));
    expect(traces.readOnly).not.toBe(true);
    const claimName = pod.volumes.find((entry: any) => entry.name === traces.name).persistentVolumeClaim.claimName;
    const claim = objects.find((object) => object.kind === 'PersistentVolumeClaim' && object.metadata.name === claimName);
    expect(claim?.spec.accessModes).toEqual(['ReadWriteMany']);
    // The image declares no VOLUME: this mount is what makes TRACE_DIR writable on the read-only root.
    const writable = container.volumeMounts.filter((entry: any) => entry.readOnly !== true).map((entry: any) => entry.mountPath);
    expect(writable.sort()).toEqual([traces.mountPath, '/tmp'].sort());
  });

  describe.each(['postgres', 'shared-volume'] as const)('the %s overlay', (overlay) => {
    it('probes liveness at /healthz and readiness at /readyz, public routes the app serves', async () => {
      const { container } = await deployment(overlay);
      expect(container.livenessProbe.httpGet.path).toBe('/healthz');
      expect(container.readinessProbe.httpGet.path).toBe('/readyz');
      const paths = [container.livenessProbe, container.readinessProbe, container.startupProbe]
        .filter(Boolean)
        .map((probe: any) => probe.httpGet.path as string);
      const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
      for (const path of paths) {
        expect(app.routeTable(), path).toContainEqual({ method: 'GET', url: path });
        // Kubelet probes carry no token.
        expect((await app.inject({ method: 'GET', url: path })).statusCode, path).toBe(200);
      }
    });

    it('probes, the Service and the image agree on the port', async () => {
      const { objects, container, env: podEnv } = await deployment(overlay);
      const { env: imageEnv } = await dockerfile();
      const [http] = container.ports;
      expect(container.ports).toHaveLength(1);
      expect(String(http.containerPort)).toBe(imageEnv['PORT']);
      expect(podEnv['PORT']).toBe(imageEnv['PORT']);
      for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) {
        expect(probe.httpGet.port).toBe(http.name);
      }
      const service = one(objects, 'Service');
      expect(service.spec.ports.map((port: any) => port.targetPort)).toEqual([http.name]);
    });

    it('selects the Deployment pods from the Service, HPA and PodDisruptionBudget', async () => {
      const { objects, object, pod } = await deployment(overlay);
      const podLabels = object.spec.template.metadata.labels;
      expect(object.spec.selector.matchLabels).toEqual(podLabels);
      expect(pod).toBeDefined();
      expect(one(objects, 'Service').spec.selector).toEqual(podLabels);
      expect(one(objects, 'PodDisruptionBudget').spec.selector.matchLabels).toEqual(podLabels);
      const hpa = one(objects, 'HorizontalPodAutoscaler');
      expect(hpa.apiVersion).toBe('autoscaling/v2');
      expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: object.metadata.name });
      expect(hpa.spec.metrics.map((metric: any) => metric.resource.name)).toContain('cpu');
      expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
      // The HPA owns the replica count; a fixed one would be reset on every apply.
      expect(object.spec.replicas).toBeUndefined();
    });

    it('runs non-root with a read-only root filesystem, no privilege escalation and no capabilities', async () => {
      const { pod, container } = await deployment(overlay);
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
      expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
      expect(container.securityContext).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ['ALL'] },
      });
      expect(container.securityContext.capabilities.add).toBeUndefined();
      expect(pod.automountServiceAccountToken).toBe(false);
    });

    it('reads tokens from a Secret mounted as a file, never from an inline value', async () => {
      const { pod, container, env: podEnv } = await deployment(overlay);
      expect(podEnv['CONTEXT_COMPILER_TOKENS']).toBeUndefined();
      const file = podEnv['CONTEXT_COMPILER_TOKENS_FILE']!;
      const mount = container.volumeMounts.find((entry: any) => file.startsWith(`${entry.mountPath}/`));
      expect(mount.readOnly).toBe(true);
      const secret = pod.volumes.find((entry: any) => entry.name === mount.name).secret;
      expect(secret.items.map((item: any) => posix.join(mount.mountPath, item.path))).toContain(file);
    });

    it("gives the container an environment the service accepts, and a grace period longer than the service's", async () => {
      const { pod, container, env: podEnv } = await deployment(overlay);
      const tokens = join(await tempDir(), 'tokens');
      await writeFile(tokens, `${TEST_TOKEN}\n`);
      const database = join(await tempDir(), 'url');
      await writeFile(database, 'postgres://context_compiler:secret@db:5432/traces\n');
      const files = { CONTEXT_COMPILER_TOKENS_FILE: tokens, ...(podEnv['TRACE_DATABASE_URL_FILE'] ? { TRACE_DATABASE_URL_FILE: database } : {}) };
      const config = loadConfig({ ...podEnv, ...files });
      expect([config.host, config.port, config.brainRoot]).toEqual(['0.0.0.0', 8080, podEnv['BRAIN_ROOT']]);
      expect(config.traceDatabaseUrl === null ? 'files' : 'postgres').toBe(overlay === 'postgres' ? 'postgres' : 'files');
      const preStopSeconds = Number(container.lifecycle?.preStop?.exec?.command?.at(-1) ?? 0);
      expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(config.shutdownGraceMs + SHUTDOWN_FLUSH_MS + preStopSeconds * 1000);
      // Kubernetes cannot set a pod's open-files limit; the cap is explicit so the runtime's limit can be checked against it.
      expect(podEnv['MAX_CONNECTIONS']).toBe(String(config.maxConnections));
    });

    it('sizes memory for the 200 MB RSS target, with the heap capped below the limit', async () => {
      const { container, env: podEnv } = await deployment(overlay);
      const mebibytes = (quantity: string) => Number(/^(\d+)Mi$/.exec(quantity)?.[1] ?? Number.NaN);
      const limit = mebibytes(container.resources.limits.memory);
      expect(limit).toBeGreaterThanOrEqual(200);
      expect(mebibytes(container.resources.requests.memory)).toBeLessThanOrEqual(limit);
      expect(container.resources.requests.cpu).toBeDefined();
      const heap = Number(/--max-old-space-size=(\d+)/.exec(podEnv['NODE_OPTIONS'] ?? '')?.[1]);
      expect(heap).toBeLessThan(limit);
    });
  });
});
