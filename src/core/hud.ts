/**
 * The heads-up display of a compile (docs/compiler.md, "HUD"): per brain file the compile
 * looked for — found or missing — its bytes, tokens, the line range used when only part was
 * taken, and its share of the budget, sorted by path; plus a snapshot of the loaded files
 * that serialises canonically, so two compiles' snapshots compare by one digest.
 */
import { sha256Hex } from './digest.js';
import { isLiveContextInput } from './persona/live-context.js';
import { approxTokens } from './tokens.js';
import { BLOCK_KINDS, type Block, type BlockKind, type Budget } from './types.js';

/**
 * The lines of a file a read took, 1-based and inclusive. Counted from the start for a read
 * that kept the head (`{from: 1, to: 120}`); from the end, as negative numbers, for one that
 * kept the tail (`{from: -120, to: -1}`: the last 120 lines) — what came before a tail is
 * never read, so its line numbers are unknown. Never inverted: `from <= to`, same sign.
 */
export interface LineRange {
  from: number;
  to: number;
}

/** A file as the snapshot records it. */
export interface SnapshotFile {
  /** The brain path looked for. */
  path: string;
  exists: boolean;
  /** sha256 of the bytes read; null when missing. */
  sha256: string | null;
  /** Bytes of the whole file (0 when missing). */
  size: number;
  /** Bytes of the file the compile's text came from: `size` unless only part was read. */
  bytes: number;
  /** `approxTokens` of the text taken. */
  tokens: number;
  /** The lines taken when only part of the file was read; null when it was read whole (or is missing). */
  lines: LineRange | null;
}

/** A file of the HUD: its snapshot, and what the delivered prompt took from it. */
export interface HudFile extends SnapshotFile {
  /**
   * Kinds of the delivered blocks built from this file, in layout order: those whose source
   * is the file (or a part of it, `path#...`) and those it makes with other files (a
   * persona's live context; see `Hud.shared`).
   */
  blocks: BlockKind[];
  /** Content chars of those blocks (a block built from several files counts whole for each). */
  chars: number;
  /** `chars / budget.limitChars`, to four decimals. */
  share: number;
}

/** A delivered block taken from no brain file: built in, or from the request. */
export interface HudDerived {
  kind: BlockKind;
  source: string;
  chars: number;
  share: number;
}

/** A delivered block distilled from several brain files (a persona's live context): credited to each of them. */
export interface HudShared extends HudDerived {
  /** The files it was built from, sorted by path. */
  files: string[];
}

export interface Hud {
  /** sha256 of the canonical snapshot (`serializeSnapshot(files)`). */
  snapshotSha256: string;
  limitChars: number;
  usedChars: number;
  /** Every file looked for, sorted by path (UTF-16 code units). */
  files: HudFile[];
  /** Delivered blocks taken from no brain file, by source then layout order. */
  derived: HudDerived[];
  /**
   * Delivered blocks built from several brain files, by source: each file lists the block
   * too. Absent from HUDs recorded before it existed (their live context is a `derived` row).
   */
  shared?: HudShared[];
}

/** What a brain read reports of a file it found, for the snapshot. */
export interface LoadedRead {
  path: string;
  size: number;
  sha256: string;
  /** Bytes of the file the text holds. */
  bytes: number;
  truncated: boolean;
  keep: 'head' | 'tail';
  text: string;
}

/** Lines in `text`: newlines, plus one for a last line without one. */
export function countLines(text: string): number {
  if (text.length === 0) return 0;
  let lines = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++;
  return text.endsWith('\n') ? lines : lines + 1;
}

/** A found file's snapshot entry: its tokens, and the line range when only part was read. */
export function loadedFile(read: LoadedRead): SnapshotFile {
  const count = read.truncated ? countLines(read.text) : 0;
  return {
    path: read.path,
    exists: true,
    sha256: read.sha256,
    size: read.size,
    bytes: read.bytes,
    tokens: approxTokens(read.text),
    lines: !read.truncated || count === 0 ? null : read.keep === 'tail' ? { from: -count, to: -1 } : { from: 1, to: count },
  };
}

/** A file looked for and missing. */
export function missingFile(path: string): SnapshotFile {
  return { path, exists: false, sha256: null, size: 0, bytes: 0, tokens: 0, lines: null };
}

export const SNAPSHOT_HEADER = 'cc-snapshot 1';

const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/**
 * The canonical bytes of a snapshot: a header line, then one JSON object per file in a
 * fixed key order (path, exists, sha256, size, bytes, tokens, lines), sorted by path, each
 * line ending in a newline. Equal snapshots give equal bytes whatever order the files came in.
 */
export function serializeSnapshot(files: readonly SnapshotFile[]): string {
  const lines = [...files].sort(byPath).map((file) =>
    JSON.stringify({
      path: file.path,
      exists: file.exists,
      sha256: file.sha256,
      size: file.size,
      bytes: file.bytes,
      tokens: file.tokens,
      lines: file.lines === null ? null : { from: file.lines.from, to: file.lines.to },
    }),
  );
  return `${SNAPSHOT_HEADER}\n${lines.map((line) => `${line}\n`).join('')}`;
}

const share = (chars: number, limit: number) => (limit > 0 ? Math.round((chars / limit) * 10_000) / 10_000 : 0);
const KIND_ORDER: ReadonlyMap<BlockKind, number> = new Map(BLOCK_KINDS.map((kind, i) => [kind, i]));

/**
 * The HUD of a compile: every file found or looked for (a path both read and missing —
 * it cannot be — counts as found), sorted by path, each with the blocks built from it and
 * their share of `budget.limitChars`. A block built from several files (a persona's live
 * context, from SOUL.md and the daily memory files, or the tasks, calendar, inbox and
 * meeting files) is credited to each of them and listed under `shared`; blocks from no file
 * under `derived`. Pure and deterministic: the order files were read in does not matter.
 */
export function buildHud(input: {
  loaded: readonly SnapshotFile[];
  missing: readonly string[];
  blocks: readonly Pick<Block, 'kind' | 'source' | 'chars'>[];
  budget: Pick<Budget, 'limitChars' | 'usedChars'>;
}): Hud {
  const byFile = new Map<string, SnapshotFile>();
  for (const file of input.loaded) byFile.set(file.path, file);
  for (const path of input.missing) if (!byFile.has(path)) byFile.set(path, missingFile(path));
  const taken = new Map<string, { kinds: Set<BlockKind>; chars: number }>();
  const credit = (path: string, block: Pick<Block, 'kind' | 'chars'>) => {
    const entry = taken.get(path) ?? { kinds: new Set<BlockKind>(), chars: 0 };
    entry.kinds.add(block.kind);
    entry.chars += block.chars;
    taken.set(path, entry);
  };
  const derived = new Map<string, HudDerived>();
  const shared = new Map<string, HudShared>();
  for (const block of input.blocks) {
    const hash = block.source.indexOf('#');
    const path = hash === -1 ? block.source : block.source.slice(0, hash);
    if (byFile.get(path)?.exists === true) {
      credit(path, block);
      continue;
    }
    const key = `${block.source}\u0000${block.kind}`;
    const inputs = input.loaded.filter((file) => file.exists && isLiveContextInput(block.source, file.path)).map((file) => file.path);
    if (inputs.length > 0) {
      for (const file of inputs) credit(file, block);
      const entry = shared.get(key) ?? { kind: block.kind, source: block.source, chars: 0, share: 0, files: [...new Set(inputs)].sort() };
      entry.chars += block.chars;
      shared.set(key, entry);
      continue;
    }
    const entry = derived.get(key) ?? { kind: block.kind, source: block.source, chars: 0, share: 0 };
    entry.chars += block.chars;
    derived.set(key, entry);
  }
  const { limitChars, usedChars } = input.budget;
  // The paths sorted as strings are (UTF-16 code units), with no comparator: the same work whatever order the reads finished in.
  const files = [...byFile.keys()].sort().map((key): HudFile => {
    const file = byFile.get(key)!;
    const entry = taken.get(file.path);
    const chars = entry?.chars ?? 0;
    const blocks = entry ? [...entry.kinds].sort((a, b) => KIND_ORDER.get(a)! - KIND_ORDER.get(b)!) : [];
    // Field by field: an object spread here cost more than the rest of the HUD together.
    const { path, exists, sha256, size, bytes, tokens, lines } = file;
    return { path, exists, sha256, size, bytes, tokens, lines, blocks, chars, share: share(chars, limitChars) };
  });
  const bySource = (a: HudDerived, b: HudDerived) => (a.source < b.source ? -1 : a.source > b.source ? 1 : KIND_ORDER.get(a.kind)! - KIND_ORDER.get(b.kind)!);
  const others = [...derived.values()].map(({ kind, source, chars }) => ({ kind, source, chars, share: share(chars, limitChars) })).sort(bySource);
  const several = [...shared.values()].map(({ kind, source, chars, files: from }) => ({ kind, source, chars, share: share(chars, limitChars), files: from })).sort(bySource);
  return { snapshotSha256: sha256Hex(serializeSnapshot(files)), limitChars, usedChars, files, derived: others, shared: several };
}

/** What a HUD is built from: the files read and the paths missed (as a brain session hands them out), and the compile's blocks and budget. */
export interface HudBasis {
  readonly loaded: readonly SnapshotFile[];
  readonly missing: readonly string[];
  readonly blocks: readonly Pick<Block, 'kind' | 'source' | 'chars'>[];
  readonly budget: Pick<Budget, 'limitChars' | 'usedChars'>;
}

const SHA256 = /^[0-9a-f]{64}$/;
const MAX_PROBLEMS = 20;

/**
 * Why a recorded HUD cannot be trusted, or an empty list: the shape, each file's digest (64
 * hex when it exists, null when missing), its sizes and line range (never inverted, never
 * zero, one sign), the files sorted by path without repeats, and the snapshot digest
 * recomputed from the canonical bytes. A trace read applies it to every event's HUD.
 */
export function hudProblems(value: unknown): string[] {
  const problems: string[] = [];
  const say = (problem: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push(problem);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return ['the HUD is not an object'];
  const hud = value as Partial<Record<keyof Hud, unknown>>;
  const count = (name: string, n: unknown) => {
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0) say(`${name} is not a whole number of 0 or more`);
  };
  if (typeof hud.snapshotSha256 !== 'string' || !SHA256.test(hud.snapshotSha256)) say('snapshotSha256 is not a sha256');
  count('limitChars', hud.limitChars);
  count('usedChars', hud.usedChars);
  if (!Array.isArray(hud.derived)) say('derived is not a list');
  if (hud.shared !== undefined && !Array.isArray(hud.shared)) say('shared is not a list');
  if (!Array.isArray(hud.files)) return [...problems, 'files is not a list'].slice(0, MAX_PROBLEMS);
  const files: SnapshotFile[] = [];
  let previous: string | undefined;
  for (const [i, raw] of hud.files.entries()) {
    const file = raw as Partial<Record<keyof HudFile, unknown>> | null;
    if (typeof file !== 'object' || file === null || typeof file.path !== 'string' || file.path.length === 0) {
      say(`files[${i}] has no path`);
      continue;
    }
    const at = `files[${i}] (${file.path.slice(0, 200)})`;
    if (previous !== undefined && !(previous < file.path)) say(`${at} is out of order or repeated: files are sorted by path, each once`);
    previous = file.path;
    if (typeof file.exists !== 'boolean') say(`${at}: exists is not a boolean`);
    if (file.exists === true ? typeof file.sha256 !== 'string' || !SHA256.test(file.sha256) : file.sha256 !== null) {
      say(`${at}: bad digest (${file.exists === true ? 'a file read has a 64-hex sha256' : 'a missing file has none'})`);
    }
    for (const name of ['size', 'bytes', 'tokens', 'chars'] as const) count(`${at}: ${name}`, file[name]);
    if (typeof file.bytes === 'number' && typeof file.size === 'number' && file.bytes > file.size) say(`${at}: more bytes taken than the file holds`);
    if (typeof file.share !== 'number' || !Number.isFinite(file.share) || file.share < 0) say(`${at}: share is not a number of 0 or more`);
    if (!Array.isArray(file.blocks) || !file.blocks.every((kind) => KIND_ORDER.has(kind as BlockKind))) say(`${at}: blocks are not block kinds`);
    const lines = file.lines as Partial<LineRange> | null | undefined;
    if (lines !== null) {
      const { from, to } = lines ?? {};
      if (typeof from !== 'number' || typeof to !== 'number' || !Number.isInteger(from) || !Number.isInteger(to) || from === 0 || to === 0) {
        say(`${at}: lines is not a range of non-zero whole numbers`);
      } else if (from > to) say(`${at}: inverted line range (${from} > ${to})`);
      else if (Math.sign(from) !== Math.sign(to)) say(`${at}: a line range counts from the start or from the end, not both (${from}..${to})`);
      if (file.exists !== true) say(`${at}: a missing file has no line range`);
    }
    files.push(file as SnapshotFile);
  }
  if (problems.length === 0 && sha256Hex(serializeSnapshot(files)) !== hud.snapshotSha256) {
    say('bad digest: snapshotSha256 is not the sha256 of the canonical snapshot');
  }
  return problems;
}
