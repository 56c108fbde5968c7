import * as fsp from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { appendFile, mkdir, readdir, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it, onTestFinished, vi } from 'vitest';
import { IdFilter } from '../../../src/io/trace/files/run-id-filter.js';
import { TraceFileError } from '../../../src/io/trace/files/write-failure.js';
import { TraceStoreError } from '../../../src/io/trace/group-commit.js';
import { noMemo } from '../../../src/core/memo.js';
import { createFileTraceStore as createTraceStore, privateTraceStoreMemo, type FileTraceStore as TraceStore, type FileTraceStoreOptions as TraceStoreOptions, type TraceFs } from '../../../src/io/trace/index.js';
import { tempDir } from '../../helpers/app.js';
import { faultyFs } from '../../helpers/faulty-fs.js';
import { deliveredEvent, failedEvent, STABLE_SYSTEM } from '../../helpers/trace-events.js';

// What only the files backend does (file modes, rotation, torn lines, the in-memory index,
// files changed under the writer); what every backend does is in contract.test.ts.

const DAY = 86_400_000;
const silent = pino({ level: 'silent' });
const stores: TraceStore[] = [];

afterEach(async () => {
  while (stores.length > 0) await stores.pop()!.close();
});

function open(dir: string, options: Partial<TraceStoreOptions> = {}): TraceStore {
  const store = createTraceStore(dir, silent, { retentionMs: 7 * DAY, ...options });
  stores.push(store);
  return store;
}

async function traceDir(): Promise<string> {
  return join(await tempDir('cc-trace-store-'), 'traces');
}

async function traceFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.endsWith('.jsonl')).sort();
}

async function waitFor(condition: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const healthy = (store: TraceStore) => () =>
  store.health().then(
    () => true,
    () => false,
  );

describe('storage', () => {
  it('stores each distinct segment text once, however many events repeat it', async () => {
    const dir = await traceDir();
    const store = open(dir);
    for (let i = 0; i < 20; i++) await store.append(deliveredEvent(`run-${i}`));
    const text = (await Promise.all((await traceFiles(dir)).map((name) => readFile(join(dir, name), 'utf8')))).join('');
    const identity = JSON.stringify(STABLE_SYSTEM[1]);
    expect(text.split(identity).length - 1).toBe(1);
    // 4 stable pieces once, then one volatile line and one input block per event.
    expect(store.stats().blobsWritten).toBe(4 + 20 * 2);
    expect(store.stats().blobsReused).toBe(19 * 4);
  });

  it('creates the directory 0700 and files 0600, whatever the umask', async () => {
    const dir = await traceDir();
    const previous = process.umask(0);
    try {
      const store = open(dir);
      await store.append(deliveredEvent('run-mode'));
    } finally {
      process.umask(previous);
    }
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    for (const name of await traceFiles(dir)) expect((await stat(join(dir, name))).mode & 0o777).toBe(0o600);
  });

  it('tightens an existing directory to 0700', async () => {
    const dir = await traceDir();
    await mkdir(dir, { mode: 0o755 });
    await fsp.chmod(dir, 0o755);
    await open(dir).append(deliveredEvent('run-mode'));
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
  });

  it('rotates to a new file by size and still reads runs across files', async () => {
    const dir = await traceDir();
    const store = open(dir, { rotateBytes: 4096 });
    for (let i = 0; i < 30; i++) await store.append(deliveredEvent(`run-${i}`, { volatile: `${'v'.repeat(300)}${i}\n` }));
    expect((await traceFiles(dir)).length).toBeGreaterThan(3);
    for (const runId of ['run-0', 'run-15', 'run-29']) expect((await store.readRun(runId))!.events[0]!.verified).toBe(true);
  });

});

describe('crash safety', () => {
  it('skips a torn last line on read and writes later events to a new file', async () => {
    const dir = await traceDir();
    const first = open(dir);
    await first.append(deliveredEvent('before-1'));
    await first.append(deliveredEvent('before-2'));
    await first.close();
    const [crashed] = await traceFiles(dir);
    // What a process killed in the middle of write(2) leaves behind.
    await appendFile(join(dir, crashed!), '{"t":"event","event":{"runId":"torn","at":"2026-01-0');
    const tornBytes = await readFile(join(dir, crashed!));

    const second = open(dir);
    expect((await second.readRun('before-2'))!.events[0]!.verified).toBe(true);
    expect(await second.readRun('torn')).toBeNull();
    await second.append(deliveredEvent('after'));
    expect((await second.readRun('after'))!.events[0]!.verified).toBe(true);
    expect(await traceFiles(dir)).toHaveLength(2);
    expect(await readFile(join(dir, crashed!))).toEqual(tornBytes);
    expect((await second.listRuns()).runs.map((run) => run.runId).sort()).toEqual(['after', 'before-1', 'before-2']);
  });

  it('skips an unreadable line anywhere in a file', async () => {
    const dir = await traceDir();
    const first = open(dir);
    await first.append(deliveredEvent('one'));
    await first.close();
    const [name] = await traceFiles(dir);
    await appendFile(join(dir, name!), 'garbage that is not json\n{"t":"event","event":{"nope":1}}\n');
    const second = open(dir);
    expect((await second.readRun('one'))!.events[0]!.verified).toBe(true);
    expect(second.stats().unreadableLines).toBe(2);
  });
});

describe('failure and recovery', () => {
  it('never reads back a batch whose fsync failed as delivered (its callers got a 503)', async () => {
    const dir = await traceDir();
    const { fs, state } = faultyFs();
    const store = open(dir, { fs, retryIntervalMs: 50 });
    await store.append(deliveredEvent('kept'));

    state.failSyncWith = 'EIO';
    await expect(store.append(deliveredEvent('answered-503'))).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });
    state.failSyncWith = null;
    await waitFor(healthy(store), 'the store to recover');
    await store.append(deliveredEvent('after'));
    await store.close();

    // What a restart sees: the written-but-unsynced lines were cut from the file.
    const reopened = open(dir);
    expect(await reopened.readRun('answered-503')).toBeNull();
    expect((await reopened.readRun('kept'))!.events[0]!.verified).toBe(true);
    expect((await reopened.readRun('after'))!.events[0]!.verified).toBe(true);
    expect(reopened.stats().unreadableLines).toBe(0);
  });

  it('fails when the directory is replaced by a file, and recovers once it is back', async () => {
    const dir = await traceDir();
    const store = open(dir, { retryIntervalMs: 50 });
    await store.append(deliveredEvent('before'));

    await rename(dir, `${dir}.moved`);
    await writeFile(dir, 'not a directory');
    // The open file still accepts writes, but they would be lost with the moved directory.
    await expect(store.append(deliveredEvent('orphaned'))).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });
    await expect(store.health()).rejects.toThrow(/TRACE_DIR/);
    await expect(store.append(deliveredEvent('meanwhile'))).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });

    await rm(dir);
    await rename(`${dir}.moved`, dir);
    await waitFor(healthy(store), 'the store to recover');
    await store.append(deliveredEvent('after'));
    expect((await store.readRun('before'))!.events[0]!.verified).toBe(true);
    expect((await store.readRun('after'))!.events[0]!.verified).toBe(true);
  });

  it('notices without traffic that its directory was deleted, continues in a new file, and says so', async () => {
    const dir = await traceDir();
    const store = open(dir, { retryIntervalMs: 50 });
    await store.append(deliveredEvent('before'));
    await rm(dir, { recursive: true });
    expect(await store.health()).toMatch(/^the current trace file was removed under the writer at .*; appends continue in a new file, and the events it held are no longer in TRACE_DIR$/);
    expect(store.stats()).toMatchObject({ filesDisturbed: 1, state: 'ok' });
    expect(await traceFiles(dir)).toHaveLength(1);
    await store.append(deliveredEvent('after'));
    expect((await store.readRun('after'))!.events[0]!.verified).toBe(true);
  });

  it('is unhealthy when the directory cannot be created at all', async () => {
    const parent = await tempDir();
    await writeFile(join(parent, 'blocker'), 'x');
    const store = open(join(parent, 'blocker', 'traces'));
    await expect(store.health()).rejects.toThrow(/TRACE_DIR/);
    await expect(store.append(deliveredEvent('nope'))).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });
  });
});

describe('a file truncated under the running writer (an operator "clearing" it, logrotate copytruncate)', () => {
  function capturingLog() {
    const lines: Array<Record<string, unknown>> = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)) as Record<string, unknown>);
        done();
      },
    });
    return { log: pino({ level: 'info' }, stream), lines };
  }

  it('is noticed before an append is acknowledged: later runs go to a new file, all read back and verify, also after a restart', async () => {
    const dir = await traceDir();
    const { log, lines } = capturingLog();
    const store = createTraceStore(dir, log, { retentionMs: 7 * DAY });
    stores.push(store);
    for (let i = 0; i < 10; i++) await store.append(deliveredEvent(`before-${i}`));
    const [first] = await traceFiles(dir);
    await truncate(join(dir, first!), 0);

    for (let i = 0; i < 10; i++) await store.append(deliveredEvent(`after-${i}`));
    expect(await traceFiles(dir)).toHaveLength(2);
    expect((await stat(join(dir, first!))).size).toBe(0);
    for (let i = 0; i < 10; i++) expect((await store.readRun(`after-${i}`))?.events.map((event) => event.verified), `after-${i}`).toEqual([true]);
    expect(store.stats()).toMatchObject({ filesDisturbed: 1, state: 'ok', appends: 20 });
    expect(await store.health()).toMatch(/^the current trace file was truncated under the writer \(from \d+ to 0 bytes\) at .*; appends continue in a new file, and the events it held are lost$/);
    expect(lines.filter((line) => line['msg'] === 'trace file changed under the writer; continuing in a new file')).toEqual([
      expect.objectContaining({ level: 40, file: first, change: 'truncated', foundBytes: 0 }),
    ]);
    await store.close();

    const restarted = open(dir);
    for (let i = 0; i < 10; i++) {
      const run = await restarted.readRun(`after-${i}`);
      expect(run?.events.map((event) => event.verified), `after-${i}`).toEqual([true]);
      // The loss is on record as what the writer saw, not as tampering.
      expect(run?.chain).toEqual({ status: 'linked', problems: [], notes: [expect.stringMatching(/was cut from \d+ to 0 bytes under its writer, which noticed/)] });
    }
    expect(await restarted.readRun('before-0')).toBeNull();
    expect(restarted.stats().unreadableLines).toBe(0);
  });

  it('writes a batch again to a new file when its file is emptied between the check and the write', async () => {
    const dir = await traceDir();
    const { fs, state } = faultyFs();
    const store = open(dir, { fs });
    await store.append(deliveredEvent('before'));
    state.beforeWrite = (path) => truncate(path, 0);
    await store.append(deliveredEvent('raced'));
    const [first, second] = await traceFiles(dir);
    // The lines that landed at the start of the emptied file were taken out again.
    expect((await stat(join(dir, first!))).size).toBe(0);
    expect(second).toBeDefined();
    await store.close();
    const run = await open(dir).readRun('raced');
    expect(run?.events.map((event) => [event.verified, event.chain])).toEqual([[true, 'linked']]);
    expect(run?.chain.problems).toEqual([]);
  });

  it('gives up on a batch whose every file is emptied under it: a typed EREPLACED failure, and health says why', async () => {
    const dir = await traceDir();
    const { fs, state } = faultyFs();
    const store = open(dir, { fs, retryIntervalMs: 60_000 });
    await store.append(deliveredEvent('before'));
    const emptyEveryFile = async (path: string) => {
      await truncate(path, 0);
      state.beforeWrite = emptyEveryFile;
    };
    state.beforeWrite = emptyEveryFile;
    const refused = await store.append(deliveredEvent('raced')).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'CC_TRACE_UNAVAILABLE', statusCode: 503 });
    expect((refused as Error).cause).toBeInstanceOf(TraceFileError);
    expect((refused as Error).cause).toMatchObject({ code: 'EREPLACED' });
    state.beforeWrite = null;
    const health = await store.health().catch((error: unknown) => error);
    expect(health).toBeInstanceOf(TraceStoreError);
    expect((health as Error).message).toBe('trace directory is not writable (TRACE_DIR): trace file removed or replaced (EREPLACED)');
    await store.close();
  });

  it('is noticed by a health check without traffic', async () => {
    const dir = await traceDir();
    const store = open(dir);
    await store.append(deliveredEvent('before'));
    const [first] = await traceFiles(dir);
    await truncate(join(dir, first!), 10);
    expect(await store.health()).toMatch(/truncated under the writer \(from \d+ to 10 bytes\)/);
    expect(await traceFiles(dir)).toHaveLength(2);
    await store.append(deliveredEvent('after'));
    expect((await store.readRun('after'))!.events[0]!.verified).toBe(true);
  });
});

describe('a full trace volume at start', () => {
  it('leaves no retry timer behind when a batch fails while the store closes', async () => {
    // Only intervals are faked, from before the store opens, so every one it starts is counted.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    onTestFinished(() => void vi.useRealTimers());
    const dir = await traceDir();
    const { fs, state } = faultyFs();
    const store = open(dir, { fs, retryIntervalMs: 50 });
    await store.append(deliveredEvent('kept'));
    let closing: Promise<void> | undefined;
    state.failSyncWith = 'EIO';
    state.beforeWrite = async () => {
      closing = store.close();
    };
    await expect(store.append(deliveredEvent('answered-503'))).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE' });
    expect(closing).toBeDefined();
    await closing;
    expect(vi.getTimerCount()).toBe(0);
  });

  it('makes the first health check fail with the reason, and it keeps failing until a write works', async () => {
    const dir = await traceDir();
    const { fs, state } = faultyFs();
    state.failWith = 'ENOSPC';
    const store = open(dir, { fs, retryIntervalMs: 50 });
    await expect(store.health()).rejects.toThrow('trace directory is not writable (TRACE_DIR): disk full (ENOSPC)');
    expect(store.stats().state).toBe('failed');
    await expect(store.append(deliveredEvent('lost'))).rejects.toMatchObject({ code: 'CC_TRACE_UNAVAILABLE', statusCode: 503 });
    await new Promise((resolve) => setTimeout(resolve, 120));
    await expect(store.health()).rejects.toThrow(/disk full/);
    // Failed probes leave no empty files behind (a retry timer's probe may hold one for the moment it fails in).
    await waitFor(async () => (await traceFiles(dir)).length === 0, 'failed probes to remove their files');

    state.failWith = null;
    await waitFor(healthy(store), 'the store to recover');
    await store.append(deliveredEvent('after'));
    expect((await store.readRun('after'))!.events[0]!.verified).toBe(true);
  });
});

describe('bounded index', () => {
  /** 12 runs over 30 events, some runs spread over many files; one event per file (rotateBytes: 1) unless the options say otherwise. */
  async function written(options: Partial<TraceStoreOptions>): Promise<TraceStore> {
    const base = Date.parse('2026-03-01T12:00:00.000Z');
    let clock = base;
    // Files are created as their events arrive, as in service.
    const store = open(await traceDir(), { now: () => clock, rotateBytes: 1, ...options });
    for (let i = 0; i < 30; i++) {
      clock = base + i * 1000;
      const at = new Date(clock).toISOString();
      const runId = `run-${(i * 7) % 12}`;
      const correlation = { requestId: `req-${i}`, traceparent: `00-${String(i % 5).repeat(32)}-00f067aa0ba902b7-01` };
      if (i % 6 === 5) await store.append(failedEvent(runId, { at, ...correlation }));
      else await store.append(deliveredEvent(runId, { at, ...correlation, status: i % 4 === 0 ? 304 : 200, subject: { kind: 'persona', id: i % 2 === 0 ? 'mars' : 'venus' } }));
    }
    return store;
  }

  async function allPages(store: TraceStore, query: Parameters<TraceStore['listRuns']>[0] = {}) {
    const runs = [];
    let cursor: string | undefined;
    do {
      const page = await store.listRuns({ ...query, limit: 5, ...(cursor ? { cursor } : {}) });
      runs.push(...page.runs);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return runs;
  }

  /**
   * The same directory as another process finds it: a second store (another writer id) that
   * only reads, its clock where the writer's stopped, every file younger than rotateMs.
   */
  async function reopened(store: TraceStore, options: Partial<TraceStoreOptions>): Promise<TraceStore> {
    await store.close();
    return open(store.dir, { now: () => Date.parse('2026-03-01T12:00:30.000Z'), ...options });
  }

  // 4: pages come from scanning evicted files; 12: the first pages come from memory, their counts completed from disk.
  // One file (rotateBytes: 1 MiB): the file being written is evicted from its start, by this process and by the next one.
  it.each([
    { budget: 4, rotateBytes: 1, reader: 'writer' },
    { budget: 12, rotateBytes: 1, reader: 'writer' },
    { budget: 4, rotateBytes: 1 << 20, reader: 'writer' },
    { budget: 4, rotateBytes: 1, reader: 'next process' },
    { budget: 7, rotateBytes: 1 << 20, reader: 'next process' },
  ])('holds at most its budget of $budget events (rotateBytes $rotateBytes, read by the $reader) and answers exactly as an unbounded index', async ({ budget, rotateBytes, reader }) => {
    const writer = await written({ maxIndexedEvents: budget, rotateBytes });
    // Another process finds every file still young (rotateMs a day): none is complete, yet it evicts them as it scans.
    const bounded = reader === 'writer' ? writer : await reopened(writer, { maxIndexedEvents: budget, rotateMs: DAY });
    const unbounded = await written({});
    if (reader !== 'writer') await bounded.listRuns();
    expect(bounded.stats().indexedEvents).toBeLessThanOrEqual(budget);
    expect(unbounded.stats().indexedEvents).toBe(30);

    const listed = await allPages(bounded);
    expect(listed).toEqual(await allPages(unbounded));
    expect(listed.map((run) => run.runId).sort()).toEqual(Array.from({ length: 12 }, (_, i) => `run-${i}`).sort());
    expect(listed.reduce((sum, run) => sum + run.events, 0)).toBe(30);
    const queries = [
      { persona: 'mars' },
      { persona: 'venus' },
      { worker: 'scribe' },
      { status: 304 },
      { outcome: 'failed' as const },
      { runId: 'run-0' },
      { runId: 'run-12' },
      { requestId: 'req-0' },
      { requestId: 'req-17', persona: 'venus' },
      { traceparent: '1'.repeat(32) },
      { traceparent: '3'.repeat(32), outcome: 'failed' as const },
      { from: '2026-03-01T12:00:05.000Z', to: '2026-03-01T12:00:20.000Z' },
      { to: '2026-03-01T12:00:25.000Z', persona: 'mars' },
    ];
    // A listing may read at most one file past its read bound: a bound of one byte pages through the same runs.
    // A listing keeps nothing of the evicted files it read, so one such store answers every query as a fresh one would.
    const partial = await written({ maxIndexedEvents: budget, maxListingScanBytes: 1, rotateBytes });
    for (const query of queries) {
      const found = await allPages(bounded, query);
      expect(found, JSON.stringify(query)).toEqual(await allPages(unbounded, query));
      expect(await allPages(partial, query), `${JSON.stringify(query)}, bounded reads`).toEqual(found);
    }
    expect((await allPages(bounded, { requestId: 'req-0' })).map((run) => run.runId)).toEqual(['run-0']);
    for (let i = 0; i < 12; i++) {
      const run = await bounded.readRun(`run-${i}`);
      expect(run, `run-${i}`).toEqual(await unbounded.readRun(`run-${i}`));
      expect(run!.chain).toEqual({ status: 'linked', problems: [], notes: [] });
      expect(run!.events.every((event) => event.verified !== false)).toBe(true);
    }
    expect(await bounded.readRun('run-12')).toBeNull();
    expect(bounded.stats().indexedEvents).toBeLessThanOrEqual(budget);
  });

  it('looks a run up only in the evicted files that may hold it', async () => {
    const opened: string[] = [];
    const fs: TraceFs = { ...fsp, open: (async (path: string, ...rest: unknown[]) => { opened.push(path); return (fsp.open as (...args: unknown[]) => unknown)(path, ...rest); }) as TraceFs['open'] };
    const store = await written({ maxIndexedEvents: 2, fs });
    opened.length = 0;
    // run-0 has 3 of the 30 events (30 files), at most 2 of them held in memory.
    expect((await store.readRun('run-0'))!.events).toHaveLength(3);
    expect(opened.length).toBeGreaterThanOrEqual(1);
    // Its 3 files, and the files before and after each, whose headers vouch for the hand-over: not the other 20-odd.
    expect(new Set(opened).size).toBeLessThanOrEqual(10);
    opened.length = 0;
    expect(await store.readRun('no-such-run')).toBeNull();
    expect(opened.length).toBeLessThan(3);
  });

  it('regression: a worker with no runs is answered from the index, without reading an evicted file (it scanned them all)', async () => {
    const opened: string[] = [];
    const fs: TraceFs = { ...fsp, open: (async (path: string, ...rest: unknown[]) => { opened.push(path); return (fsp.open as (...args: unknown[]) => unknown)(path, ...rest); }) as TraceFs['open'] };
    const store = await written({ maxIndexedEvents: 2, fs });
    await store.listRuns();
    opened.length = 0;
    expect(await store.listRuns({ worker: 'nobody' })).toEqual({ runs: [], nextCursor: null, partial: false });
    expect(await store.listRuns({ requestId: 'no-such-request' })).toEqual({ runs: [], nextCursor: null, partial: false });
    expect(opened).toEqual([]);
    // A request id is looked for only in the file whose id filter holds it (and those of its run).
    expect((await store.listRuns({ requestId: 'req-3' })).runs.map((run) => run.runId)).toEqual(['run-9']);
    expect(new Set(opened).size).toBeLessThanOrEqual(4);
  });

  it('says when a listing stopped at its read bound, and its cursor searches on from there', async () => {
    const store = await written({ maxIndexedEvents: 2, maxListingScanBytes: 1 });
    // Failed runs are the latest of three runs, their files long evicted: the first page stops after one file.
    const first = await store.listRuns({ outcome: 'failed', limit: 5 });
    expect(first.partial).toBe(true);
    expect(first.nextCursor).not.toBeNull();
    expect(first.runs.length).toBeLessThan(5);
  });

  it('run filters never miss a run id and rarely match another', () => {
    const ids = Array.from({ length: 5000 }, (_, i) => `run-${i}-${(i * 2654435761) % 1000003}`);
    const filter = new IdFilter(ids, ids.length);
    expect(ids.every((id) => filter.mayContain(id))).toBe(true);
    const strangers = Array.from({ length: 5000 }, (_, i) => `other-${i}`).filter((id) => filter.mayContain(id));
    // ≈ 0.007 % expected: an append checking a new run id rarely reads a file it does not need.
    expect(strangers.length).toBeLessThan(5);
  });

  it('still hides expired events of files it no longer holds in memory, and sweeps them', async () => {
    let clock = Date.parse('2026-03-01T12:00:00.000Z');
    const dir = await traceDir();
    const store = open(dir, { now: () => clock, rotateBytes: 1, maxIndexedEvents: 1, retentionMs: DAY });
    await store.append(deliveredEvent('old', { at: new Date(clock).toISOString() }));
    clock += DAY / 2;
    await store.append(deliveredEvent('new', { at: new Date(clock).toISOString() }));
    await store.append(deliveredEvent('newer', { at: new Date(clock + 1).toISOString() }));
    expect((await store.listRuns()).runs.map((run) => run.runId)).toEqual(['newer', 'new', 'old']);
    expect((await store.readRun('old'))!.events).toHaveLength(1);
    clock += DAY / 2 + 1000;
    expect((await store.listRuns()).runs.map((run) => run.runId)).toEqual(['newer', 'new']);
    expect(await store.readRun('old')).toBeNull();
    expect((await store.sweep()).deleted).toBe(1);
    expect((await store.readRun('new'))!.events).toHaveLength(1);
  });
});

describe('retention', () => {
  it('hides expired events and deletes their files, keeping newer ones', async () => {
    const dir = await traceDir();
    let clock = Date.parse('2026-01-01T00:00:00.000Z');
    const store = open(dir, { now: () => clock });
    await store.append(deliveredEvent('old', { at: new Date(clock).toISOString() }));
    clock += 8 * DAY;
    await store.append(deliveredEvent('new', { at: new Date(clock).toISOString() }));
    expect(await traceFiles(dir)).toHaveLength(2);

    expect(await store.readRun('old')).toBeNull();
    expect((await store.listRuns()).runs.map((run) => run.runId)).toEqual(['new']);
    expect(await store.sweep()).toEqual({ deleted: 1 });
    expect(await traceFiles(dir)).toHaveLength(1);
    expect((await store.readRun('new'))!.events[0]!.verified).toBe(true);

    // An idle service deletes its own current file too, once it has expired.
    clock += 8 * DAY;
    expect(await store.sweep()).toEqual({ deleted: 1 });
    expect(await traceFiles(dir)).toHaveLength(0);
    await store.append(deliveredEvent('later', { at: new Date(clock).toISOString() }));
    expect((await store.readRun('later'))!.events[0]!.verified).toBe(true);
  });

  it('leaves another writer’s file alone while that writer may still append to it', async () => {
    const dir = await traceDir();
    let clock = Date.parse('2026-01-01T00:00:00.000Z');
    // A one-minute retention: shorter than rotation plus the clock-skew grace.
    const other = open(dir, { now: () => clock, writerId: 'other-1-aaaa', retentionMs: 60_000 });
    await other.append(deliveredEvent('theirs', { at: new Date(clock).toISOString() }));
    const store = open(dir, { now: () => clock, writerId: 'mine-2-bbbb', retentionMs: 60_000 });
    clock += 70_000;
    expect(await store.readRun('theirs')).toBeNull();
    expect(await store.sweep()).toEqual({ deleted: 0 });
    clock += 10_000;
    expect(await store.sweep()).toEqual({ deleted: 1 });
  });
});


describe('runs bounded and owned, with the index over its budget (issue 27)', () => {
  /** Run `run-0` opened by alice in the first of many one-event files, the index holding 2 events. */
  async function spread(options: Partial<TraceStoreOptions> = {}) {
    const base = Date.now() - 3_600_000;
    let clock = base;
    const store = open(await traceDir(), { now: () => clock, rotateBytes: 1, maxIndexedEvents: 2, ...options });
    for (let i = 0; i < 12; i++) {
      clock = base + i * 1000;
      await store.append(failedEvent(i % 3 === 0 ? 'run-0' : `other-${i}`, { at: new Date(clock).toISOString(), caller: 'alice' }));
    }
    clock = Date.now();
    return store;
  }

  it('refuses another caller’s append to a run whose events were all evicted from memory', async () => {
    const store = await spread();
    expect(store.stats().indexedEvents).toBeLessThanOrEqual(3);
    await expect(store.append(failedEvent('run-0', { caller: 'bob' }))).rejects.toMatchObject({ code: 'CC_RUN_OWNED' });
    await store.append(failedEvent('run-0', { caller: 'alice' }));
    expect((await store.readRun('run-0'))!.events).toHaveLength(5);
  });

  it('counts evicted events toward the cap, and pages across evicted files in order', async () => {
    const store = await spread({ maxRunEvents: 5 });
    await store.append(failedEvent('run-0', { caller: 'alice' }));
    await expect(store.append(failedEvent('run-0', { caller: 'alice' }))).rejects.toMatchObject({ code: 'CC_RUN_FULL' });
    const first = await store.readRun('run-0', { limit: 2 });
    const second = await store.readRun('run-0', { limit: 2, cursor: first!.nextCursor! });
    const third = await store.readRun('run-0', { limit: 2, cursor: second!.nextCursor! });
    const times = [...first!.events, ...second!.events, ...third!.events].map((event) => event.at);
    expect(times).toHaveLength(5);
    expect([...times].sort()).toEqual(times);
    expect(third!.nextCursor).toBeNull();
  });

  it('regression: the cap and the owner hold when the store remembers nothing of evicted files (its memos are cache areas that may drop any entry)', async () => {
    const store = await spread({ maxRunEvents: 5, memo: { ...privateTraceStoreMemo(), chains: noMemo(), evictedRuns: noMemo() } });
    await expect(store.append(failedEvent('run-0', { caller: 'bob' }))).rejects.toMatchObject({ code: 'CC_RUN_OWNED' });
    await store.append(failedEvent('run-0', { caller: 'alice' }));
    await expect(store.append(failedEvent('run-0', { caller: 'alice' }))).rejects.toMatchObject({ code: 'CC_RUN_FULL' });
    expect((await store.readRun('run-0'))!.events).toHaveLength(5);
  });

  it('reads about the same bytes per page of a 3,000-event run as of a 375-event one: the page, not the run', async () => {
    /** Bytes read, per page after the first (which checks the file's chain once, whole). */
    async function perPage(events: number) {
      const counter = { bytes: 0 };
      const fs: TraceFs = {
        ...fsp,
        open: (async (...args: Parameters<typeof fsp.open>) => {
          const handle = await fsp.open(...args);
          return new Proxy(handle, {
            get(target, property) {
              if (property === 'read') {
                return async (...readArgs: unknown[]) => {
                  const result = await (target.read as (...a: unknown[]) => Promise<{ bytesRead: number }>)(...readArgs);
                  counter.bytes += result.bytesRead;
                  return result;
                };
              }
              const value = Reflect.get(target, property) as unknown;
              return typeof value === 'function' ? value.bind(target) : value;
            },
          });
        }) as TraceFs['open'],
      };
      const store = open(await traceDir(), { fs, maxBatchEvents: 512 });
      for (let i = 0; i < events; i += 500) {
        await Promise.all(
          Array.from({ length: Math.min(500, events - i) }, (_, j) =>
            store.append(deliveredEvent('big-500', { volatile: `### live\n${`event ${i + j} of the run. `.repeat(40)}\n` })),
          ),
        );
      }
      const sizes: number[] = [];
      let cursor: string | undefined;
      let read = 0;
      do {
        counter.bytes = 0;
        const page = await store.readRun('big-500', { limit: 20, ...(cursor === undefined ? {} : { cursor }) });
        read += page!.events.length;
        expect(page!.events.length).toBeLessThanOrEqual(20);
        sizes.push(counter.bytes);
        cursor = page!.nextCursor ?? undefined;
      } while (cursor !== undefined);
      expect(read).toBe(events);
      const later = sizes.slice(1);
      return { pages: sizes.length, first: sizes[0]!, perPage: later.reduce((sum, bytes) => sum + bytes, 0) / later.length };
    }
    const small = await perPage(375);
    const large = await perPage(3000);
    expect(large.pages / small.pages).toBeGreaterThan(7.5);
    // A run 8 times longer costs the same per page; only the first page's chain check grows with the file.
    expect(large.perPage / small.perPage).toBeLessThan(1.3);
    expect(large.perPage / small.perPage).toBeGreaterThan(0.7);
  });
});

describe('queries cost what they return (issue 36)', () => {
  /**
   * A file system that records every file the store opens, by name, and every read of one
   * from its start (`scanned`: a listing reading the file through, as a rescan would again).
   */
  function countingFs(): { fs: TraceFs; opened: string[]; scanned: string[] } {
    const opened: string[] = [];
    const scanned: string[] = [];
    const fs: TraceFs = {
      ...fsp,
      open: (async (path: string, ...rest: unknown[]) => {
        const name = path.slice(path.lastIndexOf('/') + 1);
        opened.push(name);
        const handle = (await (fsp.open as (...args: unknown[]) => unknown)(path, ...rest)) as FileHandle;
        const read = handle.read.bind(handle) as (...args: unknown[]) => unknown;
        handle.read = ((...args: unknown[]) => {
          if (args[3] === 0) scanned.push(name);
          return read(...args);
        }) as FileHandle['read'];
        return handle;
      }) as TraceFs['open'],
    };
    return { fs, opened, scanned };
  }

  /**
   * `matching` one-event runs of request `req-shared`, among as many others and followed by
   * 200 more, in files of ≈ 16 events: all evicted but the last few (an index of 20 events).
   * With `remember: false`, no evicted part's lines are remembered between reads, so every
   * read of a part opens its file (a rescan cannot hide behind the cache).
   */
  async function withMatches(matching: number, { remember = true } = {}) {
    const base = Date.parse('2026-03-01T12:00:00.000Z');
    let clock = base;
    const { fs, opened, scanned } = countingFs();
    const memo = remember ? privateTraceStoreMemo() : { ...privateTraceStoreMemo(), evictedLines: noMemo<string, never>() };
    const store = open(await traceDir(), { now: () => clock, rotateBytes: 16 * 2600, maxIndexedEvents: 20, fs, maxBatchEvents: 1, memo });
    for (let i = 0; i < 2 * matching + 200; i++) {
      clock = base + i;
      const requestId = i < 2 * matching && i % 2 === 0 ? 'req-shared' : `req-${i}`;
      await store.append(failedEvent(`run-${i}`, { at: new Date(clock).toISOString(), requestId }), { newRun: true });
    }
    await store.listRuns();
    opened.length = 0;
    scanned.length = 0;
    return { store, opened, scanned };
  }

  // Before, each matching run read its file again: 20 matches made 21 reads of one file, 200 made 205 reads of 5 (after: 1 of 1, and 7 of 7).
  it.each([20, 200])('reads each trace file at most once for ?requestId= with %i matching runs in evicted files, and pages them exactly', async (matching) => {
    const { store, opened, scanned } = await withMatches(matching, { remember: false });
    const page = await store.listRuns({ requestId: 'req-shared', limit: 10 });
    expect(page.runs.map((run) => run.runId)).toEqual(Array.from({ length: 10 }, (_, i) => `run-${2 * (matching - 1 - i)}`));
    expect(page.nextCursor).not.toBeNull();
    // Once for every run found in it, never once per run: opened once, and read through once.
    for (const names of [opened, scanned]) {
      const reads = new Map<string, number>();
      for (const name of names) reads.set(name, (reads.get(name) ?? 0) + 1);
      expect(Math.max(...reads.values())).toBe(1);
    }
    expect(new Set(scanned)).toEqual(new Set(opened));
    // Every matching run, page after page, exactly once.
    const all: string[] = [];
    let cursor: string | undefined;
    do {
      const next = await store.listRuns({ requestId: 'req-shared', limit: 100, ...(cursor ? { cursor } : {}) });
      all.push(...next.runs.map((run) => run.runId));
      cursor = next.nextCursor ?? undefined;
    } while (cursor);
    expect(all).toEqual(Array.from({ length: matching }, (_, i) => `run-${2 * (matching - 1 - i)}`));
  });

  // Before, every query read the evicted files again (2,000 matching runs: 72.5 ms against PostgreSQL's 23.8 ms, loaded).
  it('opens no trace file for a second identical ?requestId= query: the lines the first read are remembered', async () => {
    const { store, opened, scanned } = await withMatches(200);
    const first = await store.listRuns({ requestId: 'req-shared', limit: 10 });
    expect(first.runs.map((run) => run.runId)).toEqual(Array.from({ length: 10 }, (_, i) => `run-${2 * (199 - i)}`));
    opened.length = 0;
    scanned.length = 0;
    expect(await store.listRuns({ requestId: 'req-shared', limit: 10 })).toEqual(first);
    expect(opened).toEqual([]);
    // The next page and another request are answered from the same lines.
    expect((await store.listRuns({ requestId: 'req-shared', limit: 10, cursor: first.nextCursor! })).runs.map((run) => run.runId)).toEqual(
      Array.from({ length: 10 }, (_, i) => `run-${2 * (189 - i)}`),
    );
    expect((await store.listRuns({ requestId: 'req-1' })).runs.map((run) => run.runId)).toEqual(['run-1']);
    expect(scanned).toEqual([]);
  });

  it('stops reading once the client is gone', async () => {
    const { store, opened } = await withMatches(100);
    const gone = new AbortController();
    gone.abort(new Error('the client closed the connection'));
    await expect(store.listRuns({ requestId: 'req-shared', signal: gone.signal })).rejects.toThrow();
    expect(opened).toEqual([]);
  });

  // Before, a foreign evicted run read its file (its run filter said maybe); an unknown one read nothing.
  it('answers another caller’s evicted run as an unknown one, reading no file for either', async () => {
    const base = Date.parse('2026-03-01T12:00:00.000Z');
    let clock = base;
    const { fs, opened } = countingFs();
    const store = open(await traceDir(), { now: () => clock, rotateBytes: 4 * 2600, maxIndexedEvents: 4, fs });
    for (let i = 0; i < 24; i++) {
      clock = base + i * 1000;
      // alice's run and bob's others share files: a filter of callers alone would not tell them apart.
      const runId = i % 4 === 0 ? 'run-alice' : `run-bob-${i}`;
      await store.append(failedEvent(runId, { at: new Date(clock).toISOString(), caller: i % 4 === 0 ? 'alice' : 'bob' }));
    }
    await store.listRuns();
    opened.length = 0;
    expect(await store.readRun('run-alice', { visibleTo: 'bob' })).toBeNull();
    expect(await store.listRuns({ runId: 'run-alice', visibleTo: 'bob' })).toEqual({ runs: [], nextCursor: null, partial: false });
    const foreign = opened.splice(0);
    expect(await store.readRun('run-nobody', { visibleTo: 'bob' })).toBeNull();
    expect(await store.listRuns({ runId: 'run-nobody', visibleTo: 'bob' })).toEqual({ runs: [], nextCursor: null, partial: false });
    const unknown = opened.splice(0);
    expect(foreign).toEqual(unknown);
    expect(foreign).toEqual([]);
    // Its owner still reads it whole from the same files.
    expect((await store.readRun('run-alice', { visibleTo: 'alice' }))!.events).toHaveLength(6);
    expect((await store.listRuns({ runId: 'run-alice', visibleTo: 'alice' })).runs.map((run) => run.events)).toEqual([6]);
  });
});
