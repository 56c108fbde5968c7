/**
 * vitest globalSetup: the run's temporary files (copied brains, trace stores, the PostgreSQL
 * cluster, Chromium profiles, npm installs) go to a directory of the run's own on a tmpfs,
 * `/dev/shm`, when it has room, and that directory is removed when the run ends. What the
 * tests do is the same; what creating and removing their files costs is not: on this
 * project's 2-core VM the whole suite took 253–264 s with ext4's /tmp and 182 s with
 * /dev/shm, the kernel spending about 0.4 ms on each file it creates on ext4.
 *
 * fsync does nothing on a tmpfs. No test can tell: a test crashes the service or the
 * PostgreSQL server, never the machine, and the page cache outlives a process.
 *
 * A TMPDIR the caller set is kept. Without a tmpfs with `ROOM_BYTES` free (not Linux, or a
 * container's 64 MB /dev/shm), the temp dir stays where it was.
 */
import { chmodSync, mkdtempSync, rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';

const TMPFS = '/dev/shm';
const TMPFS_MAGIC = 0x01021994;
const ROOM_BYTES = 2 * 1024 ** 3;

export default function setup(): () => void {
  if (process.env['TMPDIR']) return () => undefined;
  let dir: string;
  try {
    const { type, bavail, bsize } = statfsSync(TMPFS);
    if (type !== TMPFS_MAGIC || bavail * bsize < ROOM_BYTES) return () => undefined;
    dir = mkdtempSync(join(TMPFS, 'context-compiler-tests-'));
    // Searchable by others, as /tmp is: the PostgreSQL cluster's directory in it belongs to the postgres user.
    chmodSync(dir, 0o755);
  } catch {
    return () => undefined;
  }
  // Read by os.tmpdir() in this process (the PostgreSQL cluster is made here) and inherited
  // by the test workers, forked after the global setups, and every process they start.
  process.env['TMPDIR'] = dir;
  return () => {
    delete process.env['TMPDIR'];
    rmSync(dir, { recursive: true, force: true });
  };
}
