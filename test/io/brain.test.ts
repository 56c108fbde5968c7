import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, lstat, lstatSync, openSync, writeFileSync, writeSync, type Stats } from 'node:fs';
import { link, mkdir, readlink, realpath, rename, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { TraceSourceSchema } from '../../schemas/trace.js';
import { MAX_READ_BYTES } from '../../src/core/types.js';
import {
  createBrain,
  LISTING_NAMES_MAX,
  SLOW_REVALIDATION_MS,
  unsafePathReason,
  type BrainFs,
  type ReadResult,
} from '../../src/io/brain.js';
import { createCaches } from '../../src/caches.js';
import { tempDir } from '../helpers/app.js';
import { startSwapStorm } from '../helpers/swap-storm.js';

interface Warned {
  warnings: Array<{ obj: unknown; msg: string }>;
  warn(obj: object, msg: string): void;
}

function logger(): Warned {
  const warnings: Warned['warnings'] = [];
  return { warnings, warn: (obj, msg) => warnings.push({ obj, msg }) };
}

async function brainDir(files: Record<string, string | Buffer> = {}): Promise<string> {
  const root = await tempDir('cc-brain-');
  for (const [path, content] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), content);
  }
  return root;
}

function ok(result: ReadResult) {
  if (result.status !== 'ok') throw new Error(`expected ok, got ${JSON.stringify(result)}`);
  return result;
}

/** Waits until a file just written is older than the tick within which the reader does not trust it. */
const settle = () => sleep(25);
/** Swaps the writer makes while a race test reads: the test ends on this count, not after a time. */
const STORM_SWAPS = 1000;

/** Sets a path's mtime back to the nanosecond, as `cp -p` and `rsync -t` do (utimensat). */
function restoreMtime(path: string, mtimeNs: bigint): void {
  const seconds = mtimeNs / 1_000_000_000n;
  const nanoseconds = String(mtimeNs % 1_000_000_000n).padStart(9, '0');
  execFileSync('touch', ['-m', '-d', `@${seconds}.${nanoseconds}`, path]);
}

describe('brain: confinement', () => {
  it('refuses unsafe relative paths before touching the file system', async () => {
    const brain = createBrain(await brainDir({ 'a.md': 'x' }), logger());
    for (const path of ['../etc/passwd', 'a/../../x', '/etc/passwd', 'a\\b', 'a\u0000b', '', 'a//b', './a.md']) {
      const result = await brain.read(path);
      expect(result.status, path).toBe('refused');
      expect(unsafePathReason(path), path).toBeDefined();
    }
    expect(unsafePathReason('workers/scribe/identity.md')).toBeUndefined();
  });

  it('refuses a symlink inside the brain that points outside it', async () => {
    const outside = await brainDir({ 'secret.txt': 'top secret' });
    const root = await brainDir({ 'a.md': 'inside' });
    await symlink(join(outside, 'secret.txt'), join(root, 'leak.md'));
    await symlink(outside, join(root, 'elsewhere'));
    const brain = createBrain(root, logger());
    expect(await brain.read('leak.md')).toMatchObject({ status: 'refused', reason: { code: 'outside', detail: 'resolves outside the brain root' } });
    expect((await brain.read('elsewhere/secret.txt')).status).toBe('refused');
    expect((await brain.list('elsewhere')).status).toBe('refused');
  });

  it('follows a symlink that stays inside the brain', async () => {
    const root = await brainDir({ 'notes/real.md': 'real text' });
    await symlink(join(root, 'notes/real.md'), join(root, 'alias.md'));
    const brain = createBrain(root, logger());
    expect(ok(await brain.read('alias.md')).text).toBe('real text');
  });

  it('refuses a link retargeted outside after it was cached', async () => {
    const outside = await brainDir({ 'secret.txt': 'top secret' });
    const root = await brainDir({ 'target.md': 'inside!!!!' });
    await symlink(join(root, 'target.md'), join(root, 'link.md'));
    const brain = createBrain(root, logger());
    expect(ok(await brain.read('link.md')).text).toBe('inside!!!!');
    await rm(join(root, 'link.md'));
    await symlink(join(outside, 'secret.txt'), join(root, 'link.md'));
    expect((await brain.read('link.md')).status).toBe('refused');
  });

  it('serves no cached text once its path is a link out of the root, even to the very same file', async () => {
    const outside = await tempDir('cc-outside-');
    const root = await brainDir({ 'a.md': 'inside text', 'memory/b.md': 'inside note' });
    const brain = createBrain(root, logger());
    expect(ok(await brain.read('a.md')).text).toBe('inside text');
    expect(ok(await brain.read('memory/b.md')).text).toBe('inside note');
    // The same inodes, size and mtime, now reached through links out of the root: a stat that follows links sees no change.
    await link(join(root, 'a.md'), join(outside, 'a.md'));
    await rm(join(root, 'a.md'));
    await symlink(join(outside, 'a.md'), join(root, 'a.md'));
    await mkdir(join(outside, 'memory'));
    await link(join(root, 'memory/b.md'), join(outside, 'memory/b.md'));
    await rename(join(root, 'memory'), join(root, 'memory-old'));
    await symlink(join(outside, 'memory'), join(root, 'memory'));
    expect(await brain.read('a.md')).toMatchObject({ status: 'refused', reason: { code: 'outside', detail: 'resolves outside the brain root' } });
    expect(await brain.read('memory/b.md')).toMatchObject({ status: 'refused', reason: { code: 'outside', detail: 'resolves outside the brain root' } });
    expect(await brain.list('memory')).toMatchObject({ status: 'refused', reason: { code: 'outside', detail: 'resolves outside the brain root' } });
  });

  it('confines a read to a directory with `within`: a link resolving elsewhere, even inside the brain, is refused', async () => {
    const root = await brainDir({ 'SOUL.md': 'soul text', 'topics/garden.md': 'garden notes' });
    await symlink('../SOUL.md', join(root, 'topics/soul.md'));
    await symlink('garden.md', join(root, 'topics/alias.md'));
    const brain = createBrain(root, logger());
    // Read under the root alone first, so a cached text is there to be wrongly reused.
    expect(ok(await brain.read('topics/soul.md')).text).toBe('soul text');
    expect(await brain.read('topics/soul.md', { within: 'topics' })).toMatchObject({ status: 'refused', reason: { code: 'outside', detail: 'resolves outside topics/' } });
    expect(ok(await brain.read('topics/alias.md', { within: 'topics' })).text).toBe('garden notes');
    expect(ok(await brain.read('topics/garden.md', { within: 'topics' })).text).toBe('garden notes');
    expect(await brain.read('SOUL.md', { within: 'topics' })).toMatchObject({ status: 'refused', reason: { code: 'outside', detail: 'not under topics/' } });
    expect(await brain.read('topics/nope.md', { within: 'topics' })).toEqual({ status: 'missing', path: 'topics/nope.md' });
  });

  it('reads and lists nothing from outside the root while a file and a directory are swapped for links out', async () => {
    const outside = await brainDir({ 'a.md': 'OUTSIDE file', 'memory/b.md': 'OUTSIDE note', 'memory/outside-only.md': 'OUTSIDE' });
    const root = await brainDir({ 'a.md': 'inside file', '.memory-aside/b.md': 'inside note' });
    await symlink(join(outside, 'memory'), join(root, 'memory'));
    const storm = startSwapStorm([
      { path: join(root, 'a.md'), tmp: join(root, '.swap-a'), inside: 'inside file', outside: join(outside, 'a.md') },
      { path: join(root, 'memory'), tmp: join(root, '.swap-memory'), aside: join(root, '.memory-aside'), outside: join(outside, 'memory') },
    ]);
    const brain = createBrain(root, logger());
    const seen = new Map<string, number>();
    while (storm.swaps() < STORM_SWAPS) {
      const results = await Promise.all([brain.read('a.md'), brain.read('memory/b.md'), brain.list('memory')]);
      for (const result of results) {
        const shown = result.status === 'ok' ? ('text' in result ? result.text : result.files.join(',')) : result.status;
        seen.set(shown, (seen.get(shown) ?? 0) + 1);
      }
    }
    expect(await storm.stop()).toBeGreaterThanOrEqual(STORM_SWAPS);
    const leaks = [...seen.keys()].filter((shown) => shown.includes('OUTSIDE') || shown.includes('outside-only'));
    expect(leaks, JSON.stringify([...seen])).toEqual([]);
  });

  it('never opens anything outside the root: a FIFO behind a directory swapped for a link out is neither opened nor named', async () => {
    const outside = await tempDir('cc-outside-');
    await mkdir(join(outside, 'a'));
    const fifo = join(outside, 'a', 'f.md');
    execFileSync('mkfifo', [fifo]);
    const root = await brainDir({ '.a-aside/f.md': 'INSIDE' });
    await symlink(join(outside, 'a'), join(root, 'a'));
    // Opening a FIFO to write waits for a reader: the writer says so the moment anything opens it.
    const writer = spawn('sh', ['-c', 'exec 3>"$0"; echo opened', fifo], { stdio: ['ignore', 'pipe', 'ignore'] });
    let opened = false;
    writer.stdout.on('data', () => (opened = true));
    onTestFinished(() => void writer.kill('SIGKILL'));
    const storm = startSwapStorm([{ path: join(root, 'a'), tmp: join(root, '.swap-a'), aside: join(root, '.a-aside'), outside: join(outside, 'a') }]);
    const brain = createBrain(root, logger());
    const seen = new Map<string, number>();
    while (storm.swaps() < STORM_SWAPS && !opened) {
      const results = await Promise.all([brain.read('a/f.md'), brain.read('a/f.md', { within: 'a' }), brain.list('a')]);
      for (const result of results) {
        const shown = result.status === 'ok' ? ('text' in result ? result.text : result.files.join(',')) : `${result.status}${'reason' in result ? `: ${result.reason.detail}` : ''}`;
        seen.set(shown, (seen.get(shown) ?? 0) + 1);
      }
    }
    expect(await storm.stop()).toBeGreaterThanOrEqual(STORM_SWAPS);
    await sleep(100);
    expect(opened, JSON.stringify([...seen])).toBe(false);
    // What a refusal says never depends on what lies outside (a FIFO there is not "not a regular file").
    const allowed = ['INSIDE', 'f.md', 'missing', 'refused: resolves outside the brain root', 'refused: resolves outside a/', 'refused: changed while being read'];
    expect([...seen.keys()].filter((shown) => !allowed.includes(shown)), JSON.stringify([...seen])).toEqual([]);
  });

  it('refuses a link whose target leaves the root, even one that leads back in, without looking outside', async () => {
    const outside = await tempDir('cc-outside-');
    const root = await brainDir({ 'real.md': 'real text', 'notes/n.md': 'note' });
    await symlink(root, join(outside, 'back'));
    await symlink(join(outside, 'back', 'real.md'), join(root, 'through-outside.md'));
    await symlink(join(outside, 'back', 'notes'), join(root, 'notes-through-outside'));
    await symlink(join(outside, 'nothing-here.md'), join(root, 'dangling-out.md'));
    await symlink('../../nothing-here.md', join(root, 'notes', 'up-and-out.md'));
    await symlink('real.md', join(root, 'relative.md'));
    await symlink(join(root, 'notes', 'n.md'), join(root, 'absolute.md'));
    const brain = createBrain(root, logger());
    const outsideRoot = { status: 'refused', reason: { code: 'outside', detail: 'resolves outside the brain root' } };
    expect(await brain.read('through-outside.md')).toMatchObject(outsideRoot);
    expect(await brain.read('notes-through-outside/n.md')).toMatchObject(outsideRoot);
    expect(await brain.list('notes-through-outside')).toMatchObject(outsideRoot);
    // Whether a file exists outside is never looked up, so a dangling link out is refused, not missing.
    expect(await brain.read('dangling-out.md')).toMatchObject(outsideRoot);
    expect(await brain.read('notes/up-and-out.md')).toMatchObject(outsideRoot);
    expect(ok(await brain.read('relative.md')).text).toBe('real text');
    expect(ok(await brain.read('absolute.md')).text).toBe('note');
    expect(await brain.verifyAbsent('dangling-out.md')).toEqual({ path: 'dangling-out.md', appeared: true });
  });

  it('follows a chain of links inside the brain up to a bound, and refuses a loop', async () => {
    const root = await brainDir({ 'end.md': 'the end' });
    await symlink('end.md', join(root, 'l0.md'));
    for (let i = 1; i <= 30; i++) await symlink(`l${i - 1}.md`, join(root, `l${i}.md`));
    await symlink('loop-b.md', join(root, 'loop-a.md'));
    await symlink('loop-a.md', join(root, 'loop-b.md'));
    const brain = createBrain(root, logger());
    expect(ok(await brain.read('l30.md')).text).toBe('the end');
    expect(await brain.read('loop-a.md')).toMatchObject({ status: 'refused', reason: { code: 'link-loop', detail: 'symbolic link loop' } });
  });

  it('checks the opened file by device and inode where /proc/self/fd is absent', async () => {
    const outside = await brainDir({ 'secret.md': 'OUTSIDE' });
    const root = await brainDir({ 'notes/real.md': 'real text', 'topics/t.md': 'topic', 'SOUL.md': 'soul' });
    await symlink(join(root, 'notes/real.md'), join(root, 'alias.md'));
    await symlink(join(outside, 'secret.md'), join(root, 'leak.md'));
    await symlink('../SOUL.md', join(root, 'topics/soul.md'));
    const procless: BrainFs = { lstat, readlink: () => Promise.reject(Object.assign(new Error('no /proc'), { code: 'ENOENT' })) };
    const brain = createBrain(root, logger(), { fs: procless });
    expect(ok(await brain.read('alias.md')).text).toBe('real text');
    expect(ok(await brain.read('notes/real.md')).text).toBe('real text');
    expect(await brain.read('leak.md')).toMatchObject({ status: 'refused' });
    expect(await brain.read('topics/soul.md', { within: 'topics' })).toMatchObject({ status: 'refused', reason: { code: 'outside', detail: 'resolves outside topics/' } });
    expect(await brain.list('notes')).toMatchObject({ status: 'ok', files: ['real.md'] });

    await writeFile(join(outside, 'a.md'), 'OUTSIDE file');
    await writeFile(join(root, 'a.md'), 'inside file');
    const storm = startSwapStorm([{ path: join(root, 'a.md'), tmp: join(root, '.swap-a'), inside: 'inside file', outside: join(outside, 'a.md') }]);
    const texts = new Set<string>();
    while (storm.swaps() < STORM_SWAPS) {
      const result = await brain.read('a.md');
      texts.add(result.status === 'ok' ? result.text : result.status);
    }
    expect(await storm.stop()).toBeGreaterThanOrEqual(STORM_SWAPS);
    expect([...texts].filter((text) => text.includes('OUTSIDE'))).toEqual([]);
  });

  it('reports missing files and directories as missing, and a missing root as an error', async () => {
    const brain = createBrain(await brainDir(), logger());
    expect(await brain.read('nope.md')).toEqual({ status: 'missing', path: 'nope.md' });
    expect((await brain.read('no/such/dir.md')).status).toBe('missing');
    expect((await brain.list('nowhere')).status).toBe('missing');
    const gone = createBrain(join(await tempDir(), 'not-there'), logger());
    expect((await gone.read('a.md')).status).toBe('error');
  });

  it('refuses directories as files and reports binary files as errors', async () => {
    const root = await brainDir({ 'dir/a.md': 'x', 'blob.bin': Buffer.from([0x89, 0x50, 0x00, 0x01, 0x02]) });
    const brain = createBrain(root, logger());
    expect((await brain.read('dir')).status).toBe('refused');
    expect(await brain.read('blob.bin')).toMatchObject({ status: 'error', reason: { code: 'binary', detail: 'binary file (NUL bytes)' } });
  });
});

describe('brain: decoding', () => {
  it('normalises CRLF and lone CR to LF and drops a BOM', async () => {
    const brain = createBrain(await brainDir({ 'a.md': '\ufeffone\r\ntwo\rthree\n' }), logger());
    expect(ok(await brain.read('a.md')).text).toBe('one\ntwo\nthree\n');
  });

  it('tolerates invalid UTF-8 with replacement characters and a warning', async () => {
    const log = logger();
    const bytes = Buffer.concat([Buffer.from('good '), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from(' text')]);
    const brain = createBrain(await brainDir({ 'bad.md': bytes }), log);
    const result = ok(await brain.read('bad.md'));
    expect(result.text).toMatch(/^good \ufffd+ text$/);
    expect(result.warnings).toEqual(['bad.md is not valid UTF-8; invalid bytes were replaced']);
    expect(log.warnings).toEqual([{ obj: { path: 'bad.md' }, msg: 'brain file is not valid UTF-8' }]);
    expect(result.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
  });
});

describe('brain: bounded reads', () => {
  const lines = Array.from({ length: 100 }, (_, i) => `line ${String(i).padStart(3, '0')}`).join('\n') + '\n';

  it('keeps the newest part of an over-size file on a tail read, from a line boundary', async () => {
    const brain = createBrain(await brainDir({ 'topics/t.md': lines }), logger());
    const result = ok(await brain.read('topics/t.md', { maxBytes: 50, keep: 'tail' }));
    expect(result.truncated).toBe(true);
    expect(result.text.endsWith('line 099\n')).toBe(true);
    expect(result.text.startsWith('line ')).toBe(true);
    expect(result.text.length).toBeLessThanOrEqual(50);
    expect(result.size).toBe(Buffer.byteLength(lines));
    expect(result.warnings[0]).toMatch(/kept the last/);
  });

  it('keeps the oldest part on a head read, ending at a line boundary', async () => {
    const brain = createBrain(await brainDir({ 'a.md': lines }), logger());
    const result = ok(await brain.read('a.md', { maxBytes: 50 }));
    expect(result.text.startsWith('line 000\n')).toBe(true);
    expect(result.text.endsWith('\n')).toBe(true);
    expect(result.text.length).toBeLessThanOrEqual(50);
  });

  it('never splits a multi-byte character at the cut', async () => {
    const brain = createBrain(await brainDir({ 'u.md': 'é'.repeat(40) }), logger());
    const head = ok(await brain.read('u.md', { maxBytes: 9 }));
    expect(head.text).toBe('éééé');
    const tail = ok(await brain.read('u.md', { maxBytes: 9, keep: 'tail' }));
    expect(tail.text).toBe('éééé');
    expect(head.warnings.some((warning) => warning.includes('UTF-8'))).toBe(false);
  });

  it('reads a file under the cap whole', async () => {
    const brain = createBrain(await brainDir({ 'a.md': lines }), logger());
    const result = ok(await brain.read('a.md', { maxBytes: 100_000, keep: 'tail' }));
    expect(result.truncated).toBe(false);
    expect(result.text).toBe(lines);
  });
});

describe('brain: caching', () => {
  it('serves a cached read while the file is unchanged and revalidates after it changes', async () => {
    const root = await brainDir({ 'a.md': 'first version' });
    await settle();
    const brain = createBrain(root, logger());
    const first = ok(await brain.read('a.md'));
    expect(await brain.read('a.md')).toBe(first);
    await writeFile(join(root, 'a.md'), 'second, longer version');
    expect(ok(await brain.read('a.md')).text).toBe('second, longer version');
  });

  it('notices a same-size rewrite through its mtime', async () => {
    const root = await brainDir({ 'a.md': 'AAAA' });
    const brain = createBrain(root, logger());
    expect(ok(await brain.read('a.md')).text).toBe('AAAA');
    await writeFile(join(root, 'a.md'), 'BBBB');
    const later = new Date(Date.now() + 5000);
    await utimes(join(root, 'a.md'), later, later);
    expect(ok(await brain.read('a.md')).text).toBe('BBBB');
  });

  it('answers concurrent cold reads of one file with one read', async () => {
    const brain = createBrain(await brainDir({ 'a.md': 'shared' }), logger());
    const results = await Promise.all(Array.from({ length: 8 }, () => brain.read('a.md')));
    for (const result of results) expect(result).toBe(results[0]);
  });

  it('lists a directory sorted, and sees a new file after the directory changes', async () => {
    const root = await brainDir({ 'memory/b.md': 'b', 'memory/a.md': 'a', 'memory/sub/c.md': 'c' });
    const brain = createBrain(root, logger());
    expect(await brain.list('memory')).toEqual({ status: 'ok', path: 'memory', files: ['a.md', 'b.md'], directories: ['sub'], warnings: [] });
    await writeFile(join(root, 'memory/0.md'), 'new');
    const later = new Date(Date.now() + 5000);
    await utimes(join(root, 'memory'), later, later);
    expect(await brain.list('memory')).toMatchObject({ files: ['0.md', 'a.md', 'b.md'] });
  });

  it('keeps the last names of a directory past maxListingEntries, files and subdirectories apart, and says so', async () => {
    // 40 daily files, 2026-10-01 on, created in no particular order.
    const days = Array.from({ length: 40 }, (_, i) => new Date(Date.UTC(2026, 9, 1 + ((i * 17) % 40))).toISOString().slice(0, 10) + '.md');
    const root = await brainDir(Object.fromEntries([...days.map((name) => [`memory/${name}`, 'x']), ['memory/sub/a.md', 'a'], ['memory/other/a.md', 'a']]));
    const brain = createBrain(root, logger(), { maxListingEntries: 7 });
    const listed = await brain.list('memory');
    // More than twice the cap: the kept names were cut while streaming, and are still the newest.
    expect(listed).toEqual({
      status: 'ok',
      path: 'memory',
      files: [...days].sort().slice(-7),
      directories: ['other', 'sub'],
      warnings: ['memory has more than 7 entries (BRAIN_LISTING_MAX_ENTRIES); only the last 7 by name (the newest, for dated names) were listed'],
    });
    expect(await createBrain(root, logger(), { maxListingEntries: 42 }).list('memory')).toMatchObject({ files: [...days].sort(), warnings: [] });
  });
});

describe('brain: changes that keep size and mtime', () => {
  it('sees a same-size in-place rewrite whose mtime was restored (cp -p, rsync --inplace -t)', async () => {
    const root = await brainDir({ 'a.md': 'AAAA\n' });
    const { mtimeNs } = await stat(join(root, 'a.md'), { bigint: true });
    await settle();
    const brain = createBrain(root, logger());
    const first = ok(await brain.read('a.md'));
    expect(await brain.read('a.md')).toBe(first);
    const fd = openSync(join(root, 'a.md'), 'r+');
    writeSync(fd, 'BBBB\n', 0);
    closeSync(fd);
    restoreMtime(join(root, 'a.md'), mtimeNs);
    expect((await stat(join(root, 'a.md'), { bigint: true })).mtimeNs).toBe(mtimeNs);
    expect(ok(await brain.read('a.md')).text).toBe('BBBB\n');
  });

  it('sees a file added to a directory whose mtime was restored (rsync -t)', async () => {
    const root = await brainDir({ 'memory/a.md': 'a' });
    const { mtimeNs } = await stat(join(root, 'memory'), { bigint: true });
    await settle();
    const brain = createBrain(root, logger());
    const first = await brain.list('memory');
    expect(await brain.list('memory')).toBe(first);
    await writeFile(join(root, 'memory/b.md'), 'b');
    restoreMtime(join(root, 'memory'), mtimeNs);
    expect(await brain.list('memory')).toMatchObject({ files: ['a.md', 'b.md'] });
  });

  it('does not trust a file whose change time is within a tick of its read, and reads it again next time', async () => {
    const root = await brainDir({ 'a.md': 'AAAA' });
    // The file and the directory changed more than a tick apart, as a busy machine may write them.
    await sleep(60);
    await mkdir(join(root, 'memory'));
    await writeFile(join(root, 'memory/b.md'), 'b');
    const file = await stat(join(root, 'a.md'));
    const memory = await stat(join(root, 'memory'));
    // The reader's clock, set just after what it reads changed: a change later in the same tick would leave every stamp as it is.
    // Each read gets its own, as the two changed more than a tick apart.
    let clock = file.ctimeMs + 5;
    const brain = createBrain(root, logger(), { now: () => clock });
    const first = ok(await brain.read('a.md'));
    expect(await brain.read('a.md')).not.toBe(first);
    clock = memory.ctimeMs + 5;
    const listed = await brain.list('memory');
    expect(await brain.list('memory')).not.toBe(listed);
    clock = Math.max(file.ctimeMs, memory.ctimeMs) + 1000;
    const trusted = ok(await brain.read('a.md'));
    expect(await brain.read('a.md')).toBe(trusted);
    const kept = await brain.list('memory');
    expect(await brain.list('memory')).toBe(kept);
  });
});

describe('brain: links inside the root', () => {
  /** A ConfigMap volume as kubelet writes it: files are links through `..data`, itself a link to a timestamped directory. */
  async function configMapBrain(files: Record<string, string>): Promise<string> {
    const root = await brainDir();
    await mkdir(join(root, '..2026_01_01'));
    for (const [name, text] of Object.entries(files)) {
      await writeFile(join(root, '..2026_01_01', name), text);
      await symlink(`..data/${name}`, join(root, name));
    }
    await symlink('..2026_01_01', join(root, '..data'));
    return root;
  }

  /** kubelet's atomic update: a new timestamped directory, `..data` swapped to it by a rename, the old one removed. */
  async function updateConfigMap(root: string, dir: string, files: Record<string, string>): Promise<void> {
    const previous = await readlink(join(root, '..data'));
    await mkdir(join(root, dir));
    for (const [name, text] of Object.entries(files)) await writeFile(join(root, dir, name), text);
    await symlink(dir, join(root, '..data_tmp'));
    await rename(join(root, '..data_tmp'), join(root, '..data'));
    await rm(join(root, previous), { recursive: true });
  }

  it('caches a brain built from links (a ConfigMap volume) with lstats alone, and sees its atomic ..data update', async () => {
    const root = await configMapBrain({ 'SOUL.md': 'soul, first version' });
    await settle();
    const stats: string[] = [];
    let descriptorChecks = 0;
    const fs: BrainFs = {
      lstat: (path, callback) => (stats.push(path), lstat(path, callback)),
      readlink: (path) => (descriptorChecks++, readlink(path)),
    };
    const brain = createBrain(root, logger(), { fs });
    const first = ok(await brain.read('SOUL.md'));
    expect(first.text).toBe('soul, first version');
    const checksForOneRead = descriptorChecks;
    for (let i = 0; i < 5; i++) expect(await brain.read('SOUL.md')).toBe(first);
    // Each cached read: the link, the ..data link, the directory it names and the file; nothing opened, nothing read.
    const real = await realpath(root);
    expect(stats.slice(0, 4).map((path) => relative(real, path)).sort()).toEqual(['..2026_01_01', '..2026_01_01/SOUL.md', '..data', 'SOUL.md']);
    expect(stats).toHaveLength(5 * 4);
    expect(descriptorChecks).toBe(checksForOneRead);

    await updateConfigMap(root, '..2026_02_01', { 'SOUL.md': 'soul, second version' });
    expect(ok(await brain.read('SOUL.md')).text).toBe('soul, second version');
    await settle();
    const second = ok(await brain.read('SOUL.md'));
    expect(await brain.read('SOUL.md')).toBe(second);
  });

  it('never serves a cached linked file once a link on the way is retargeted out of the root, even to the very same file', async () => {
    const outside = await tempDir('cc-outside-');
    const root = await configMapBrain({ 'SOUL.md': 'inside soul' });
    await settle();
    const brain = createBrain(root, logger());
    const first = ok(await brain.read('SOUL.md'));
    expect(await brain.read('SOUL.md')).toBe(first);
    // The same inode, size and times, now behind a ..data that leads out of the root.
    await mkdir(join(outside, 'data'));
    await link(join(root, '..2026_01_01', 'SOUL.md'), join(outside, 'data', 'SOUL.md'));
    await symlink(join(outside, 'data'), join(root, '..data_tmp'));
    await rename(join(root, '..data_tmp'), join(root, '..data'));
    expect(await brain.read('SOUL.md')).toMatchObject({ status: 'refused', reason: { code: 'outside', detail: 'resolves outside the brain root' } });
  });
});

/** The real lstat, counting the paths it was asked for. */
function countingFs(): { fs: BrainFs; stats: string[] } {
  const stats: string[] = [];
  return { stats, fs: { lstat: (path, callback) => (stats.push(path), lstat(path, callback)) } };
}

describe('brain: revalidation', () => {
  it('revalidates concurrent reads of a cached file with one stat', async () => {
    const root = await brainDir({ 'a.md': 'alpha', 'memory/b.md': 'beta' });
    await settle();
    const counting = countingFs();
    const brain = createBrain(root, logger(), { fs: counting.fs });
    const first = ok(await brain.read('a.md'));
    ok(await brain.read('memory/b.md'));
    await brain.list('memory');
    expect(counting.stats).toEqual([]);
    const results = await Promise.all([
      ...Array.from({ length: 32 }, () => brain.read('a.md')),
      ...Array.from({ length: 8 }, () => brain.list('memory')),
      brain.read('memory/b.md'),
    ]);
    for (const result of results.slice(0, 32)) expect(result).toBe(first);
    const real = await realpath(root);
    expect(counting.stats.map((path) => relative(real, path)).sort()).toEqual(['a.md', 'memory', 'memory/b.md']);
  });

  it('gives a read asked for after a change the new text, even while an earlier read of the file waits', async () => {
    const root = await brainDir({ 'a.md': 'first version' });
    const brain = createBrain(root, logger());
    ok(await brain.read('a.md'));
    const earlier = brain.read('a.md');
    writeFileSync(join(root, 'a.md'), 'second, longer version');
    const later = brain.read('a.md');
    expect(ok(await later).text).toBe('second, longer version');
    expect((await earlier).status).toBe('ok');
    expect(ok(await brain.read('a.md')).text).toBe('second, longer version');
  });

  it('confirms a missing file with one stat, and reads it once it exists', async () => {
    const root = await brainDir();
    const counting = countingFs();
    const brain = createBrain(root, logger(), { fs: counting.fs });
    expect(await brain.read('later.md')).toEqual({ status: 'missing', path: 'later.md' });
    expect(await brain.read('later.md')).toEqual({ status: 'missing', path: 'later.md' });
    expect(counting.stats).toHaveLength(1);
    await writeFile(join(root, 'later.md'), 'here now');
    expect(ok(await brain.read('later.md')).text).toBe('here now');
  });

  it('reports a cached file that was deleted as missing, and sees it again when it is back', async () => {
    const root = await brainDir({ 'a.md': 'alpha' });
    const brain = createBrain(root, logger());
    ok(await brain.read('a.md'));
    await rename(join(root, 'a.md'), join(root, 'gone.txt'));
    expect(await brain.read('a.md')).toEqual({ status: 'missing', path: 'a.md' });
    expect(await brain.read('a.md')).toEqual({ status: 'missing', path: 'a.md' });
    await rename(join(root, 'gone.txt'), join(root, 'a.md'));
    expect(ok(await brain.read('a.md')).text).toBe('alpha');
  });

  it('refuses a link created outside the root where a file was missing', async () => {
    const outside = await brainDir({ 'secret.txt': 'top secret' });
    const root = await brainDir();
    const brain = createBrain(root, logger());
    expect((await brain.read('link.md')).status).toBe('missing');
    await symlink(join(outside, 'secret.txt'), join(root, 'link.md'));
    expect(await brain.read('link.md')).toMatchObject({ status: 'refused', reason: { code: 'outside', detail: 'resolves outside the brain root' } });
  });
});

/** The real stats, counted by where they were made: through the thread pool (`lstat`) or on the event loop (`lstatSync`); the root on a file system of `type`. */
function twoWayFs(type: number, slowSyncMs = 0): { fs: BrainFs; onLoop: string[]; offLoop: string[] } {
  const onLoop: string[] = [];
  const offLoop: string[] = [];
  return {
    onLoop,
    offLoop,
    fs: {
      lstat: (path, callback) => (offLoop.push(path), lstat(path, callback)),
      lstatSync: (path): Stats | string => {
        onLoop.push(path);
        const until = performance.now() + slowSyncMs;
        while (performance.now() < until);
        try {
          return lstatSync(path);
        } catch (error) {
          return (error as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
        }
      },
      statfs: async () => ({ type }),
    },
  };
}

const EXT4 = 0xef53;
const NFS = 0x6969;

describe('brain: where revalidation stats are made (BRAIN_REVALIDATE)', () => {
  it('stats on the event loop where the root is on a local file system, and still sees every change completed before the read', async () => {
    const root = await brainDir({ 'a.md': 'first version', 'memory/b.md': 'beta' });
    await settle();
    const counting = twoWayFs(EXT4);
    const brain = createBrain(root, logger(), { fs: counting.fs });
    const first = ok(await brain.read('a.md'));
    ok(await brain.read('memory/b.md'));
    for (let i = 0; i < 3; i++) expect(await brain.read('a.md')).toBe(first);
    const real = await realpath(root);
    expect(counting.onLoop.map((path) => relative(real, path))).toEqual(['a.md', 'a.md', 'a.md']);
    expect(counting.offLoop).toEqual([]);
    writeFileSync(join(root, 'a.md'), 'second, longer version');
    expect(ok(await brain.read('a.md')).text).toBe('second, longer version');
    await rm(join(root, 'memory/b.md'));
    expect(await brain.read('memory/b.md')).toEqual({ status: 'missing', path: 'memory/b.md' });
  });

  it('stats through the thread pool where the root is on a network file system, so a stalled mount cannot freeze the process', async () => {
    const root = await brainDir({ 'a.md': 'alpha' });
    await settle();
    const counting = twoWayFs(NFS);
    const brain = createBrain(root, logger(), { fs: counting.fs });
    const first = ok(await brain.read('a.md'));
    expect(await brain.read('a.md')).toBe(first);
    expect(counting.offLoop).toHaveLength(1);
    expect(counting.onLoop).toEqual([]);
  });

  it('moves off the event loop for good, with a warning, once a revalidation there is slow', async () => {
    const root = await brainDir({ 'a.md': 'alpha' });
    await settle();
    const counting = twoWayFs(EXT4, SLOW_REVALIDATION_MS + 2);
    const log = logger();
    const brain = createBrain(root, log, { fs: counting.fs });
    const first = ok(await brain.read('a.md'));
    expect(await brain.read('a.md')).toBe(first);
    expect(counting.onLoop).toHaveLength(1);
    expect(log.warnings).toEqual([{ obj: { tookMs: expect.any(Number), stats: 1 }, msg: expect.stringMatching(/^brain stats are slow/) }]);
    for (let i = 0; i < 2; i++) expect(await brain.read('a.md')).toBe(first);
    expect(counting.onLoop).toHaveLength(1);
    expect(counting.offLoop).toHaveLength(2);
  });

  it('does as told when the mode is sync or async, whatever the file system', async () => {
    const root = await brainDir({ 'a.md': 'alpha' });
    await settle();
    for (const [revalidate, type, onLoop, offLoop] of [
      ['sync', NFS, 2, 0],
      ['async', EXT4, 0, 2],
    ] as const) {
      // Slow stats do not move a mode that was chosen.
      const counting = twoWayFs(type, SLOW_REVALIDATION_MS + 2);
      const log = logger();
      const brain = createBrain(root, log, { fs: counting.fs, revalidate });
      const first = ok(await brain.read('a.md'));
      for (let i = 0; i < 2; i++) expect(await brain.read('a.md')).toBe(first);
      expect([counting.onLoop.length, counting.offLoop.length]).toEqual([onLoop, offLoop]);
      expect(log.warnings).toEqual([]);
    }
  });
});

describe('brain: the cache it is given', () => {
  it('keeps what it reads in the cache areas it is given, and answers the same after they are cleared', async () => {
    const root = await brainDir({ 'a.md': 'one two', 'dir/b.md': 'three' });
    await settle();
    const caches = createCaches();
    const brain = createBrain(root, logger(), { cache: caches.brain });
    const first = ok(await brain.read('a.md'));
    expect((await brain.list('dir')).status).toBe('ok');
    expect(caches.brain.files.stats().entries).toBe(1);
    expect(caches.brain.listings.stats().entries).toBe(1);
    // The same object while the file is unchanged: what is derived from it can be kept with it.
    expect(ok(await brain.read('a.md'))).toBe(first);
    caches.clear();
    expect(caches.brain.files.stats()).toMatchObject({ entries: 0, bytes: 0 });
    expect(ok(await brain.read('a.md'))).toEqual(first);
    await writeFile(join(root, 'a.md'), 'three four five');
    expect(ok(await brain.read('a.md')).text).toBe('three four five');
  });
});

describe('brain: sessions and verification', () => {
  it('records each file a session read once, with its digest, and nothing it could not read', async () => {
    const root = await brainDir({ 'a.md': 'alpha', 'b.md': 'beta' });
    const brain = createBrain(root, logger());
    const session = brain.session();
    await session.read('a.md');
    await session.read('missing.md');
    await session.read('a.md');
    await session.read('b.md', { maxBytes: 3, keep: 'tail' });
    expect(session.sources()).toEqual([
      { path: 'a.md', size: 5, mtimeMs: expect.any(Number), sha256: createHash('sha256').update('alpha').digest('hex'), truncated: false, maxBytes: 262144, keep: 'head' },
      { path: 'b.md', size: 4, mtimeMs: expect.any(Number), sha256: expect.any(String), truncated: true, maxBytes: 3, keep: 'tail' },
    ]);
    expect(brain.session().sources()).toEqual([]);
  });

  it('tells whether a recorded source changed since, or went missing', async () => {
    const root = await brainDir({ 'a.md': 'alpha' });
    const brain = createBrain(root, logger());
    const session = brain.session();
    await session.read('a.md');
    const [recorded] = session.sources();
    expect(await brain.verify(recorded!)).toMatchObject({ status: 'unchanged', sha256: recorded!.sha256 });
    await writeFile(join(root, 'a.md'), 'alpha, edited');
    expect(await brain.verify(recorded!)).toMatchObject({ status: 'changed' });
    await rm(join(root, 'a.md'));
    expect(await brain.verify(recorded!)).toEqual({ status: 'missing', path: 'a.md' });
  });
});

describe('brain: read bounds', () => {
  it('refuses to verify a record whose read bound is over MAX_READ_BYTES (a forged trace) or not a whole number, and the trace schema refuses it too', async () => {
    const root = await brainDir({ 'big.md': 'x'.repeat(2 * MAX_READ_BYTES) });
    const brain = createBrain(root, logger());
    const sha256 = createHash('sha256').update('x').digest('hex');
    for (const maxBytes of [MAX_READ_BYTES + 1, 2 ** 40, 1.5, 0, -1, Number.NaN]) {
      expect(await brain.verify({ path: 'big.md', sha256, maxBytes }), String(maxBytes)).toMatchObject({ status: 'refused', reason: { code: 'bounds', detail: expect.stringMatching(/^maxBytes must be a whole number from 1 to 1048576/) } });
      expect(await brain.read('big.md', { maxBytes }), String(maxBytes)).toMatchObject({ status: 'refused' });
    }
    expect(await brain.verify({ path: 'big.md', sha256, maxBytes: MAX_READ_BYTES })).toMatchObject({ status: 'changed' });
    const source = { path: 'big.md', size: 1, mtimeMs: 1, sha256, truncated: true, keep: 'head' };
    expect(TraceSourceSchema.safeParse({ ...source, maxBytes: MAX_READ_BYTES }).success).toBe(true);
    expect(TraceSourceSchema.safeParse({ ...source, maxBytes: MAX_READ_BYTES + 1 }).success).toBe(false);
  });
});

describe('brain: what a session found missing and listed', () => {
  it('records missing paths and listings once each, and tells which appeared and which files came and went', async () => {
    const root = await brainDir({ 'memory/a.md': 'a', 'memory/b.md': 'b', 'memory/sub/c.md': 'c' });
    const brain = createBrain(root, logger());
    const session = brain.session();
    await session.read('calendar/today.md');
    await session.list('meetings');
    await session.list('memory');
    await session.list('memory');
    await session.read('calendar/today.md');
    expect(session.absent()).toEqual(['calendar/today.md', 'meetings']);
    const [memory] = session.listings();
    expect(memory).toEqual({ path: 'memory', count: 2, sha256: createHash('sha256').update('a.md\nb.md\n').digest('hex'), names: ['a.md', 'b.md'] });
    expect(session.listings()).toHaveLength(1);

    expect(await brain.verifyAbsent('calendar/today.md')).toEqual({ path: 'calendar/today.md', appeared: false });
    expect(await brain.verifyListing(memory!)).toEqual({ path: 'memory', changed: false, currentCount: 2, currentSha256: memory!.sha256, added: [], removed: [] });
    await mkdir(join(root, 'calendar'));
    await writeFile(join(root, 'calendar/today.md'), '- 09:00 Standup\n');
    await writeFile(join(root, 'memory/0.md'), 'new');
    await rm(join(root, 'memory/b.md'));
    await mkdir(join(root, 'memory/another-dir'));
    expect(await brain.verifyAbsent('calendar/today.md')).toEqual({ path: 'calendar/today.md', appeared: true });
    expect(await brain.verifyAbsent('../calendar/today.md')).toEqual({ path: '../calendar/today.md', appeared: false });
    expect(await brain.verifyListing(memory!)).toMatchObject({ changed: true, currentCount: 2, added: ['0.md'], removed: ['b.md'] });
    await rm(join(root, 'memory'), { recursive: true });
    expect(await brain.verifyListing(memory!)).toMatchObject({ changed: true, currentCount: 0, added: [], removed: ['a.md', 'b.md'] });
  });

  it('keeps only the count and digest of a directory with more than LISTING_NAMES_MAX files', async () => {
    const files = Object.fromEntries(Array.from({ length: LISTING_NAMES_MAX + 1 }, (_, i) => [`memory/${String(i).padStart(3, '0')}.md`, 'x']));
    const brain = createBrain(await brainDir(files), logger());
    const session = brain.session();
    await session.list('memory');
    const [memory] = session.listings();
    expect(memory).toMatchObject({ path: 'memory', count: LISTING_NAMES_MAX + 1 });
    expect(memory).not.toHaveProperty('names');
    expect(await brain.verifyListing(memory!)).toEqual({ path: 'memory', changed: false, currentCount: LISTING_NAMES_MAX + 1, currentSha256: memory!.sha256 });
  });

  it('says a path appeared when it is back as a link the reader refuses, and a listing changed when it cannot be listed', async () => {
    const outside = await brainDir({ 'elsewhere/x.md': 'x' });
    const root = await brainDir({ 'memory/a.md': 'a' });
    const brain = createBrain(root, logger());
    const session = brain.session();
    await session.read('gone.md');
    await session.list('memory');
    await symlink(join(outside, 'elsewhere/x.md'), join(root, 'gone.md'));
    await rename(join(root, 'memory'), join(root, 'memory-old'));
    await symlink(join(outside, 'elsewhere'), join(root, 'memory'));
    expect(await brain.verifyAbsent('gone.md')).toEqual({ path: 'gone.md', appeared: true });
    expect(await brain.verifyListing(session.listings()[0]!)).toEqual({ path: 'memory', changed: true, currentCount: null, currentSha256: null });
  });
});

describe('brain: session records and replays', () => {
  it('replays what a session read into a new one with one batch of stats, its sources, absences and listings the same', async () => {
    const root = await brainDir({ 'SOUL.md': 'soul', 'memory/2026-11-30.md': 'today', 'personas/venus.md': 'v' });
    await settle();
    const counting = countingFs();
    const brain = createBrain(root, logger(), { fs: counting.fs });
    const first = brain.session();
    await Promise.all([first.read('SOUL.md'), first.read('memory/2026-11-30.md'), first.read('personas/mars.md'), first.list('memory')]);
    const record = first.record();
    expect(record).not.toBeNull();
    counting.stats.length = 0;
    const second = brain.session();
    expect(await second.replay(record!)).toBe(true);
    expect(second.sources()).toEqual(first.sources());
    expect(second.absent()).toEqual(['personas/mars.md']);
    expect(second.listings()).toEqual(first.listings());
    // The very arrays the recording session hands out, for what a caller keyed by them (delivery's HUD) to be found again.
    expect(second.loaded()).toBe(first.loaded());
    expect(second.sources()).toBe(first.sources());
    // One stat per path looked up, all issued together.
    const real = await realpath(root);
    expect([...new Set(counting.stats.map((path) => relative(real, path)))].sort()).toEqual(['SOUL.md', 'memory', 'memory/2026-11-30.md', 'personas', 'personas/mars.md']);
  });

  it('does not replay once a file it read changed, a file it missed appeared, or a directory it listed gained a file', async () => {
    const root = await brainDir({ 'SOUL.md': 'soul', 'memory/2026-11-30.md': 'today', 'personas/venus.md': 'v' });
    await settle();
    const brain = createBrain(root, logger());
    const recorded = async () => {
      const session = brain.session();
      await Promise.all([session.read('SOUL.md'), session.read('personas/mars.md'), session.list('memory')]);
      return session.record()!;
    };
    const changes: Array<() => Promise<void>> = [
      () => writeFile(join(root, 'SOUL.md'), 'soul, rewritten'),
      () => writeFile(join(root, 'personas/mars.md'), 'an override'),
      () => writeFile(join(root, 'memory/2026-12-01.md'), 'tomorrow'),
    ];
    for (const change of changes) {
      const record = await recorded();
      expect(await brain.session().replay(record)).toBe(true);
      await change();
      const session = brain.session();
      expect(await session.replay(record)).toBe(false);
      expect(session.sources()).toEqual([]);
      await settle();
    }
  });

  it('records nothing to replay when a read was not cached (changed within a tick of the read), and replays no other reader’s record', async () => {
    const root = await brainDir({ 'a.md': 'AAAA' });
    const { ctimeMs } = await stat(join(root, 'a.md'));
    const recent = createBrain(root, logger(), { now: () => ctimeMs + 5 });
    const session = recent.session();
    ok(await session.read('a.md'));
    expect(session.record()).toBeNull();
    await settle();
    const brain = createBrain(root, logger());
    const reader = brain.session();
    ok(await reader.read('a.md'));
    const record = reader.record()!;
    expect(await createBrain(root, logger()).session().replay(record)).toBe(false);
    expect(await brain.session().replay(record)).toBe(true);
  });
});
