/**
 * The last known good session: the last live answer the client received per persona and
 * query, kept so that a fallback serves it — its clock line made anew, every other byte as
 * the service compiled it — instead of the empty-brain static session. Bounded in entries
 * and bytes; optionally kept in a file across restarts of the host (written atomically, mode
 * 0600; a file that cannot be read or is not what the client writes is ignored with a
 * process warning, never a throw).
 */
import { createHash, randomBytes } from 'node:crypto';
import { open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { isTimeZone, localDay, parseClockLine } from './clock.js';

export const DEFAULT_STALE_MAX_AGE_MS = 6 * 60 * 60 * 1000;
/** At most this many sessions are kept (the least recently received go first)... */
export const LAST_KNOWN_GOOD_ENTRIES = 32;
/** ...holding at most this many characters between them. */
export const LAST_KNOWN_GOOD_CHARS = 4 * 1024 * 1024;
/** A file larger than this is not the client's (its JSON escapes add little to the characters it holds). */
const FILE_BYTES = 2 * LAST_KNOWN_GOOD_CHARS;
const FILE_VERSION = 1;

/** A live session cut around its clock line: `before`, the clock line, then `after` are its text. */
export interface KeptSession {
  /** `session` (OpenAI, Azure) or `setup` (Gemini). */
  member: 'session' | 'setup';
  /** The persona the service compiled it for. */
  persona: string;
  /** The service's run that delivered it. */
  runId: string;
  /** The instant its clock line states (ms since the epoch), in `timeZone`. */
  at: number;
  timeZone: string;
  before: string;
  after: string;
  /** The session as JSON with its text left empty: parsed afresh for each use. */
  shell: string;
  /** The stable prefix the answer's cache plan names, which a served copy keeps byte for byte. */
  prefix: { chars: number; sha256: string };
}

/** Where a session's text holds its clock line, per the answer's cache plan. */
export interface ClockCut {
  before: string;
  after: string;
  at: number;
  timeZone: string;
  prefix: { chars: number; sha256: string };
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The clock block's label, which opens the volatile tail after a blank line. No compiled content can hold a label's marker `<<cc`, so the one found is the clock's own. */
const CLOCK_LABEL = '\n\n<<cc clock | ';

/**
 * Cuts `text` (the session's instructions: the delivered instructions made realtime-safe
 * ASCII) around its clock line: the line after the clock block's label, which must be
 * exactly a clock line. The answer's cache plan (`cacheBoundaries` of the lean answer a
 * connect asks for, or `cache.boundaries` of the full one) names the stable prefix: `prefix`
 * is the plan's own when `text` holds it byte for byte (its blocks were ASCII), ending where
 * the clock block begins, else the lines of `text` before the clock block. Null when anything
 * does not hold: such an answer is not kept.
 */
export function cutAtClock(answer: Record<string, unknown>, text: string): ClockCut | null {
  const { cacheBoundaries, cache } = answer;
  const boundaries = Array.isArray(cacheBoundaries) ? cacheBoundaries : isRecord(cache) && Array.isArray(cache['boundaries']) ? cache['boundaries'] : null;
  if (boundaries === null) return null;
  const stable = boundaries.filter((boundary: unknown) => isRecord(boundary) && boundary['class'] !== 'volatile').at(-1) as Record<string, unknown> | undefined;
  const { prefixChars, prefixSha256 } = stable ?? {};
  if (typeof prefixChars !== 'number' || !Number.isSafeInteger(prefixChars) || prefixChars <= 0 || typeof prefixSha256 !== 'string') return null;
  const label = text.indexOf(CLOCK_LABEL);
  if (label < 0 || text.includes(CLOCK_LABEL, label + 1)) return null;
  const labelEnd = text.indexOf('\n', label + 2);
  if (labelEnd < 0) return null;
  const start = labelEnd + 1;
  const lineEnd = text.indexOf('\n', start);
  const line = text.slice(start, lineEnd < 0 ? undefined : lineEnd);
  const parsed = line.length <= 200 ? parseClockLine(line) : null;
  if (parsed === null) return null;
  const planned = text.length >= prefixChars && sha256(text.slice(0, prefixChars)) === prefixSha256;
  // The plan's prefix, when the text holds it, ends exactly where the clock block begins.
  if (planned && prefixChars !== label) return null;
  const prefix = planned ? { chars: prefixChars, sha256: prefixSha256 } : { chars: label, sha256: sha256(text.slice(0, label)) };
  return { before: text.slice(0, start), after: text.slice(start + line.length), at: parsed.at.getTime(), timeZone: parsed.timeZone, prefix };
}

/** Why a kept session may not be served at `now`; null when it may. */
export function staleness(kept: KeptSession, now: Date, maxAgeMs: number): string | null {
  if (now.getTime() - kept.at > maxAgeMs) return `is older than ${Math.round(maxAgeMs / 60_000)} min`;
  if (localDay(now, kept.timeZone) !== localDay(new Date(kept.at), kept.timeZone)) return `is from another day in ${kept.timeZone}`;
  return null;
}

export interface LastKnownGood {
  /** Keeps `kept` under `key`, the newest for it; `operatorZone`: its zone is the operator's (the query named none). */
  keep(key: string, kept: KeptSession, operatorZone: boolean): void;
  /** The session kept under `key`, once the file (if any) was read. */
  find(key: string): Promise<KeptSession | undefined>;
  /** The zone of the last answer whose query named none: the operator's as the service sees it. */
  zone(): Promise<string | undefined>;
  /** Resolves once the file holds what was kept so far (for a test, or before the host exits). */
  flush(): Promise<void>;
}

const charsOf = (kept: KeptSession) => kept.before.length + kept.after.length + kept.shell.length + kept.persona.length + kept.runId.length + 256;

/** The store of one client; with `file`, read from it at once and written to it after each change. */
export function createLastKnownGood(file?: string): LastKnownGood {
  const entries = new Map<string, KeptSession>();
  let chars = 0;
  let operatorZone: string | undefined;

  function put(key: string, kept: KeptSession): void {
    const old = entries.get(key);
    if (old !== undefined) {
      chars -= charsOf(old);
      entries.delete(key);
    }
    if (charsOf(kept) > LAST_KNOWN_GOOD_CHARS) return;
    entries.set(key, kept);
    chars += charsOf(kept);
    for (const [oldest, entry] of entries) {
      if (entries.size <= LAST_KNOWN_GOOD_ENTRIES && chars <= LAST_KNOWN_GOOD_CHARS) break;
      entries.delete(oldest);
      chars -= charsOf(entry);
    }
  }

  const loaded = file === undefined ? Promise.resolve() : load(file).then(
    (saved) => {
      if (saved === null) return;
      // What this process received while the file was read is newer: it stays.
      const newer = [...entries];
      entries.clear();
      chars = 0;
      for (const [key, kept] of [...saved.entries, ...newer]) put(key, kept);
      operatorZone ??= saved.zone;
    },
    () => undefined,
  );

  let writing: Promise<void> | null = null;
  let dirty = false;
  let warned = false;
  function save(): void {
    if (file === undefined) return;
    dirty = true;
    if (writing !== null) return;
    writing = (async () => {
      await loaded;
      while (dirty) {
        dirty = false;
        try {
          await writeAtomically(file, JSON.stringify({ version: FILE_VERSION, zone: operatorZone ?? null, entries: [...entries] }));
          warned = false;
        } catch (error) {
          if (!warned) warn(file, `not written (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
          warned = true;
        }
      }
    })().finally(() => {
      writing = null;
      // A change kept between the loop's last check and here is written too.
      if (dirty) save();
    });
  }

  return {
    keep(key, kept, isOperatorZone) {
      put(key, kept);
      if (isOperatorZone) operatorZone = kept.timeZone;
      save();
    },
    async find(key) {
      await loaded;
      return entries.get(key);
    },
    async zone() {
      await loaded;
      return operatorZone;
    },
    async flush() {
      await loaded;
      while (writing !== null) await writing;
    },
  };
}

function warn(file: string, what: string): void {
  process.emitWarning(`context-compiler client: last-known-good file ${file} ${what}`, { code: 'CC_CLIENT_LAST_KNOWN_GOOD' });
}

/** The file's entries and zone; null (with a warning) when it is missing, too large, or not what the client writes. */
async function load(file: string): Promise<{ entries: Array<[string, KeptSession]>; zone: string | undefined } | null> {
  let text: string;
  try {
    const { size } = await stat(file);
    if (size > FILE_BYTES) {
      warn(file, `ignored: ${size} bytes, over ${FILE_BYTES}`);
      return null;
    }
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') warn(file, `ignored: not readable (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    return null;
  }
  let saved: unknown;
  try {
    saved = JSON.parse(text);
  } catch {
    warn(file, 'ignored: not JSON');
    return null;
  }
  if (!isRecord(saved) || saved['version'] !== FILE_VERSION || !Array.isArray(saved['entries'])) {
    warn(file, 'ignored: not a last-known-good file of this client');
    return null;
  }
  const entries = saved['entries'].filter((entry: unknown): entry is [string, KeptSession] => Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string' && isKept(entry[1]));
  if (entries.length < saved['entries'].length) warn(file, `read without ${saved['entries'].length - entries.length} of its ${saved['entries'].length} entries: not sessions this client kept`);
  const zone = typeof saved['zone'] === 'string' && isTimeZone(saved['zone']) ? saved['zone'] : undefined;
  return { entries, zone };
}

/** A kept session as the client writes it: every member of its type, the prefix's digest holding and the zone valid. */
function isKept(value: unknown): value is KeptSession {
  if (!isRecord(value)) return false;
  const { member, persona, runId, at, timeZone, before, after, shell, prefix } = value;
  if ((member !== 'session' && member !== 'setup') || typeof persona !== 'string' || typeof runId !== 'string' || typeof at !== 'number' || !Number.isFinite(at)) return false;
  if (typeof timeZone !== 'string' || typeof before !== 'string' || typeof after !== 'string' || typeof shell !== 'string' || !isRecord(prefix)) return false;
  const { chars, sha256: digest } = prefix;
  if (typeof chars !== 'number' || !Number.isSafeInteger(chars) || chars <= 0 || chars > before.length || typeof digest !== 'string') return false;
  return isTimeZone(timeZone) && sha256(before.slice(0, chars)) === digest;
}

/** Writes `text` to `file` through a private temporary file beside it, synced, then renamed over it: a reader sees the old file or the new, never a part. */
async function writeAtomically(file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(text, 'utf8');
    await handle.datasync();
  } catch (error) {
    await handle.close().catch(() => undefined);
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
  await handle.close();
  try {
    await rename(temporary, file);
  } catch (error) {
    await unlink(temporary).catch(() => undefined);
    throw error;
  }
}
