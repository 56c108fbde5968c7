/** Write failures of the files backend: the writer's own, and how `/readyz` says any of them without a path. */
/** A write failure the writer finds itself, coded as the errno it stands for (or `EREPLACED`), so `describeWriteFailure` reads it as it reads the system's. */
export class TraceFileError extends Error {
  override readonly name = 'TraceFileError';
  constructor(
    readonly code: 'EIO' | 'EREPLACED',
    message: string,
  ) {
    super(message);
  }
}

const REASONS: Record<string, string> = {
  ENOSPC: 'disk full',
  EDQUOT: 'disk quota exceeded',
  EROFS: 'read-only file system',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOENT: 'directory missing',
  ENOTDIR: 'not a directory',
  EEXIST: 'not a directory',
  EIO: 'I/O error',
  EREPLACED: 'trace file removed or replaced',
  EMFILE: 'too many open files',
};

/** A reason fit for a public readiness answer: the variable to check and the errno, never a path. */
export function describeWriteFailure(error: unknown): string {
  const code = (error as NodeJS.ErrnoException | null)?.code ?? 'error';
  return `trace directory is not writable (TRACE_DIR): ${REASONS[code] ?? 'write failed'} (${code})`;
}
