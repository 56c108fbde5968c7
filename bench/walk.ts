/**
 * `node --import tsx bench/walk.ts [path]`: which of the service's own files and functions
 * one request runs through, from the route to the bytes written — the walk
 * docs/architecture.md describes, counted rather than estimated. The app is built on the
 * example brain and a temporary trace directory in four processes that differ only in how
 * many requests they send (0 to 3) before V8's precise coverage is read; a function ran for a
 * request when its call count is higher with it. The first request is cold (every file read
 * and every block compiled), the second warm (the same minute again: the path of nearly
 * every request), the third a new minute (the day's reads replayed, a new compile). Counted: functions under src/, routes/ and schemas/
 * (closures included, module bodies left out), the files that hold them, and those files'
 * lines. A measurement, not a test.
 *
 * `--table` prints only the counts table docs/architecture.md shows (between its
 * `<!-- walk:begin -->` and `<!-- walk:end -->` comments); `--write` writes it there.
 * test/ops/architecture-walk.test.ts fails when the doc and the walk disagree. Compiled
 * (`node dist/bench/walk.js`, as that test runs it) it counts the same: each compiled module
 * stands for its source file, and the counts are of the source's lines.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const flags = new Set(process.argv.slice(2).filter((arg) => arg.startsWith('--')));
const path = process.argv.slice(2).find((arg) => !arg.startsWith('--')) ?? '/context/mars?now=2026-11-30T17:30:00Z';
/** The requests the processes send, in order: the path (cold), again (warm), then at the next minute. */
const requests = [path, path, path.replace(/T(\d\d):(\d\d)/, (_all, hour: string, minute: string) => `T${hour}:${String((Number(minute) + 1) % 60).padStart(2, '0')}`)];
const OWN = /^(src|routes|schemas)\//;
/** The source file a loaded module was compiled from, relative to `root`: `dist/src/x.js` is `src/x.ts`. */
function sourceOf(root: string, url: string): string {
  const file = relative(root, fileURLToPath(url));
  return file.startsWith('dist/') ? file.slice('dist/'.length).replace(/\.js$/, '.ts') : file;
}

interface FunctionCoverage {
  functionName: string;
  ranges: Array<{ startOffset: number; endOffset: number; count: number }>;
}

/** In a child: build the app, send the request `times` times, and print every project function's call count. */
async function countCalls(times: number): Promise<void> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  // Counting from before the service's code is loaded, and never reset: V8 leaves out a closure whose parent did not run in the period read.
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
  const { buildApp } = await import('../src/app.js');
  const { createLogger } = await import('../src/logger.js');
  const { loadConfig, PROJECT_ROOT } = await import('../src/config.js');
  const dir = await mkdtemp(join(tmpdir(), 'cc-walk-'));
  // Load shedding off: on a busy machine (or under coverage) a shed request would walk another path.
  const config = loadConfig({
    BRAIN_ROOT: join(PROJECT_ROOT, 'examples/brain'),
    TRACE_DIR: join(dir, 'traces'),
    LOG_LEVEL: 'silent',
    PRESSURE_MAX_EVENT_LOOP_DELAY: '0',
    PRESSURE_MAX_HEAP_USED: '0',
  });
  // No warm-up: it compiles each persona in the background once the app is ready, and would run beside the requests walked.
  const app = await buildApp(config, { logger: createLogger(config), warmUp: false });
  await app.ready();
  for (const url of requests.slice(0, times)) {
    const response = await app.inject({ method: 'GET', url });
    if (response.statusCode !== 200) throw new Error(`${url} answered ${response.statusCode}`);
  }
  const { result } = (await session.post('Profiler.takePreciseCoverage')) as { result: Array<{ url: string; functions: FunctionCoverage[] }> };
  const calls: Record<string, [string, number]> = {};
  for (const script of result) {
    if (!script.url.startsWith('file://')) continue;
    const file = sourceOf(PROJECT_ROOT, script.url);
    if (!OWN.test(file)) continue;
    // The module body, and the name helper the TypeScript loader adds, are not functions of the service.
    script.functions.forEach((fn, i) => {
      if (i > 0 && fn.functionName !== '__name') calls[`${file}@${fn.ranges[0]!.startOffset}`] = [fn.functionName || '(anonymous)', fn.ranges[0]!.count];
    });
  }
  process.stdout.write(JSON.stringify(calls));
  await app.close();
  await rm(dir, { recursive: true, force: true });
}

function run(times: number): Record<string, [string, number]> {
  const output = execFileSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), path], { env: { ...process.env, WALK_TIMES: String(times) }, encoding: 'utf8' });
  return JSON.parse(output) as Record<string, [string, number]>;
}

/** The functions whose count grew from `before` to `after`, by file. */
function ran(before: Record<string, [string, number]>, after: Record<string, [string, number]>): Map<string, string[]> {
  const files = new Map<string, string[]>();
  for (const [key, [name, count]] of Object.entries(after)) {
    if (count <= (before[key]?.[1] ?? 0)) continue;
    const file = key.slice(0, key.lastIndexOf('@'));
    files.set(file, [...(files.get(file) ?? []), name]);
  }
  return files;
}

/** Lines of a source file as it is in the repository (what a reader opens). */
function lines(root: string, file: string): number {
  return readFileSync(join(root, file), 'utf8').split('\n').length - 1;
}

interface Walked {
  label: string;
  /** The table's name for it. */
  kind: string;
  files: Map<string, string[]>;
}

function totals(files: Map<string, string[]>, root: string) {
  const all = [...files.values()].flat();
  return { files: files.size, functions: all.length, named: all.filter((name) => name !== '(anonymous)').length, lines: [...files.keys()].reduce((sum, file) => sum + lines(root, file), 0) };
}

function report({ label, files }: Walked, root: string): void {
  const { functions, named, lines: read } = totals(files, root);
  process.stdout.write(`${label}: ${files.size} files, ${functions} functions (${named} named); the files hold ${read} lines\n`);
  for (const [file, list] of [...files].sort((a, b) => a[0].localeCompare(b[0]))) {
    process.stdout.write(`  ${file}: ${list.length} (${list.filter((name) => name !== '(anonymous)').join(', ')})\n`);
  }
}

/**
 * The counts as the markdown table docs/architecture.md holds between its walk markers: files
 * and their lines, which depend on the code alone. The function count is left out of it: a
 * closure or two more or less runs with how soon a trace's fsync returns (a tmpfs, a busy disk).
 */
function countsTable(walked: readonly Walked[], root: string): string {
  const int = (n: number) => n.toLocaleString('en-US');
  return [
    `| \`GET ${path}\` | files | lines in those files |`,
    '|---|---:|---:|',
    ...walked.map(({ kind, files }) => {
      const count = totals(files, root);
      return `| ${kind} | ${int(count.files)} | ${int(count.lines)} |`;
    }),
  ].join('\n');
}

const WALK_BEGIN = '<!-- walk:begin -->';
const WALK_END = '<!-- walk:end -->';

/** `doc` with the text between its walk markers replaced by `table`. */
function withCounts(doc: string, table: string): string {
  const begin = doc.indexOf(WALK_BEGIN);
  const end = doc.indexOf(WALK_END);
  if (begin < 0 || end < begin) throw new Error(`the doc has no ${WALK_BEGIN} … ${WALK_END} section`);
  return `${doc.slice(0, begin + WALK_BEGIN.length)}\n${table}\n${doc.slice(end)}`;
}

if (process.env['WALK_TIMES'] !== undefined) await countCalls(Number(process.env['WALK_TIMES']));
else {
  const counts = [0, 1, 2, 3].map(run);
  const walked: Walked[] = [
    { label: `GET ${path}, cold`, kind: 'cold (every file read, every block compiled)', files: ran(counts[0]!, counts[1]!) },
    { label: `GET ${path}, warm (the same minute again)`, kind: 'warm (the same minute again)', files: ran(counts[1]!, counts[2]!) },
    { label: `GET ${requests[2]}, a new minute`, kind: 'a new minute', files: ran(counts[2]!, counts[3]!) },
  ];
  // The repository, from src/ (tsx) or dist/src/ alike; imported only here, so a walked child loads it while counted.
  const { PROJECT_ROOT } = await import('../src/config.js');
  const table = countsTable(walked, PROJECT_ROOT);
  if (flags.has('--table')) process.stdout.write(`${table}\n`);
  else if (flags.has('--write')) {
    const doc = join(PROJECT_ROOT, 'docs/architecture.md');
    writeFileSync(doc, withCounts(readFileSync(doc, 'utf8'), table));
    process.stdout.write(`${table}\nwritten to docs/architecture.md\n`);
  } else for (const each of walked) report(each, PROJECT_ROOT);
}
