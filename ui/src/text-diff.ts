/**
 * A line diff of two texts (a block as two runs delivered it), bounded so that no block can
 * make it slow: the common head and tail are trimmed in linear time, then Myers' O(ND)
 * algorithm runs on at most `MAX_DIFF_LINES` lines a side and stops after `MAX_DIFF_EDITS`
 * edits — time O((N + M) · D) and memory O(D²) with D capped — answering "too different to
 * show" beyond either cap. Pure and deterministic; shared by the viewer's compare page and
 * `context-compiler diff`.
 * @see https://doi.org/10.1007/BF01840446 (E. W. Myers, "An O(ND) difference algorithm and its variations", 1986)
 */

/** Lines a side, after the common head and tail are trimmed, beyond which a diff is not attempted. */
export const MAX_DIFF_LINES = 10_000;
/** Inserted plus removed lines beyond which two texts are "too different to show". */
export const MAX_DIFF_EDITS = 400;
/** Unchanged lines shown around each change. */
export const DIFF_CONTEXT_LINES = 2;

export interface DiffLine {
  op: 'same' | 'removed' | 'added';
  text: string;
  /** For a removed line replaced by an added one: the part of this line that differs (UTF-16 indices, end exclusive). */
  changed?: [number, number];
}

export type TextDiff =
  | { kind: 'same' }
  | { kind: 'lines'; lines: DiffLine[]; added: number; removed: number }
  | { kind: 'too-different'; reason: string };

/** A diff's lines with long unchanged stretches folded to their count, `DIFF_CONTEXT_LINES` kept around each change. */
export type DiffHunkItem = DiffLine | { op: 'skip'; lines: number };

/** The lines of a text: split at `\n`, so a final newline gives a last empty line on both sides alike. */
function splitLines(text: string): string[] {
  return text.split('\n');
}

/** The line-level difference between two texts; see the module comment for its bounds. */
export function diffLines(before: string, after: string): TextDiff {
  if (before === after) return { kind: 'same' };
  const a = splitLines(before);
  const b = splitLines(after);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const middleA = a.slice(head, a.length - tail);
  const middleB = b.slice(head, b.length - tail);
  if (middleA.length > MAX_DIFF_LINES || middleB.length > MAX_DIFF_LINES) {
    return { kind: 'too-different', reason: `over ${MAX_DIFF_LINES.toLocaleString('en-US')} changed lines a side` };
  }
  const middle = myers(middleA, middleB, MAX_DIFF_EDITS);
  if (middle === null) return { kind: 'too-different', reason: `over ${MAX_DIFF_EDITS.toLocaleString('en-US')} lines added or removed` };
  const lines: DiffLine[] = [
    ...a.slice(0, head).map((text): DiffLine => ({ op: 'same', text })),
    ...middle,
    ...a.slice(a.length - tail).map((text): DiffLine => ({ op: 'same', text })),
  ];
  markChanges(lines);
  return { kind: 'lines', lines, added: lines.filter((line) => line.op === 'added').length, removed: lines.filter((line) => line.op === 'removed').length };
}

/**
 * The shortest edit script from `a` to `b` as diff lines, or null when it needs more than
 * `maxEdits` edits. Keeps one copy of the furthest-reaching paths per edit count, so the
 * script is read back from the end (memory O(D²)).
 */
function myers(a: readonly string[], b: readonly string[], maxEdits: number): DiffLine[] | null {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice(offset - d - 1, offset + d + 2));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(a, b, trace, d);
    }
  }
  return null;
}

/** Reads the edit script back from the saved paths, from the end to the start. */
function backtrack(a: readonly string[], b: readonly string[], trace: readonly Int32Array[], edits: number): DiffLine[] {
  const out: DiffLine[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = edits; d > 0; d--) {
    // trace[d] holds the paths after d - 1 edits, for diagonals -d - 1 .. d + 1.
    const saved = trace[d]!;
    const at = (k: number) => saved[k + d + 1]!;
    const k = x - y;
    const previousK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const previousX = at(previousK);
    const previousY = previousX - previousK;
    while (x > previousX && y > previousY) out.push({ op: 'same', text: a[--x]! }), y--;
    if (x === previousX) out.push({ op: 'added', text: b[--y]! });
    else out.push({ op: 'removed', text: a[--x]! });
  }
  while (x > 0 && y > 0) out.push({ op: 'same', text: a[--x]! }), y--;
  return out.reverse();
}

/** Marks, in each run of removed lines followed by as many added ones, the part of each pair that differs. */
function markChanges(lines: DiffLine[]): void {
  for (let i = 0; i < lines.length; ) {
    let removed = 0;
    while (lines[i + removed]?.op === 'removed') removed++;
    let added = 0;
    while (lines[i + removed + added]?.op === 'added') added++;
    if (removed > 0 && removed === added) {
      for (let j = 0; j < removed; j++) {
        const [before, after] = [lines[i + j]!, lines[i + removed + j]!];
        let start = 0;
        while (start < before.text.length && start < after.text.length && before.text[start] === after.text[start]) start++;
        let end = 0;
        while (end < before.text.length - start && end < after.text.length - start && before.text[before.text.length - 1 - end] === after.text[after.text.length - 1 - end]) end++;
        before.changed = [start, before.text.length - end];
        after.changed = [start, after.text.length - end];
      }
    }
    i += Math.max(1, removed + added);
  }
}

/** The diff's lines with unchanged stretches longer than twice the context folded to `{op: 'skip', lines}`. */
export function diffHunks(lines: readonly DiffLine[], context = DIFF_CONTEXT_LINES): DiffHunkItem[] {
  const keep = new Uint8Array(lines.length);
  lines.forEach((line, i) => {
    if (line.op === 'same') return;
    for (let j = Math.max(0, i - context); j <= Math.min(lines.length - 1, i + context); j++) keep[j] = 1;
  });
  const out: DiffHunkItem[] = [];
  for (let i = 0; i < lines.length; ) {
    if (keep[i]) {
      out.push(lines[i]!);
      i++;
      continue;
    }
    let skipped = 0;
    while (i < lines.length && !keep[i]) {
      skipped++;
      i++;
    }
    out.push({ op: 'skip', lines: skipped });
  }
  return out;
}
