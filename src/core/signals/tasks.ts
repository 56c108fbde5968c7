import { toSingleLine } from '../text.js';
import { headingOf, indentOf, listItemText, markdownLines } from './markdown.js';

/**
 * `tasks/open.md`: one task per top-level `- [ ] ...` line. Documented with examples in
 * docs/brain-formats.md ("Tasks").
 */

/** 0 is most urgent. */
export type TaskPriority = 0 | 1 | 2 | 3;
export type PrioritySource = 'marker' | 'heading' | 'default';

export interface Task {
  title: string;
  note: string | undefined;
  priority: TaskPriority;
  prioritySource: PrioritySource;
  /** 1-based line in the file. */
  line: number;
}

export interface TaskList {
  openCount: number;
  doneCount: number;
  /** Open tasks, most urgent first; ties keep file order. */
  tasks: Task[];
}

export const DEFAULT_TASK_PRIORITY: TaskPriority = 2;
export const MAX_TASK_TEXT_CHARS = 300;

const CHECKBOX = /^\[([ xX])\][ \t]+(.*)$/s;
const WORD_PRIORITY: Record<string, TaskPriority> = {
  urgent: 0, critical: 0, asap: 0, blocker: 0,
  high: 1, important: 1,
  medium: 2, normal: 2,
  low: 3,
};
const P_MARKER = /(?<![\w-])P([0-3])(?![\w-])/g;
const BANG_MARKER = /(?<![\w!])!(urgent|critical|asap|high|important|medium|normal|low)(?![\w-])/gi;
const PAREN_MARKER = /\([ \t]{0,3}prio(?:rity)?[ \t]{0,3}[:=][ \t]{0,3}(urgent|critical|high|medium|normal|low|P[0-3])[ \t]{0,3}\)/gi;

function markerPriority(value: string): TaskPriority {
  const lower = value.toLowerCase();
  if (/^p[0-3]$/.test(lower)) return Number(lower[1]) as TaskPriority;
  return WORD_PRIORITY[lower] ?? DEFAULT_TASK_PRIORITY;
}

/** Finds priority markers in a task line; several → the most urgent wins. Returns the text without them. */
function takeMarkers(text: string): { text: string; priority: TaskPriority | undefined } {
  let priority: TaskPriority | undefined;
  const take = (value: string) => {
    const found = markerPriority(value);
    priority = priority === undefined ? found : (Math.min(priority, found) as TaskPriority);
    return ' ';
  };
  const stripped = text
    .replace(PAREN_MARKER, (_match, value: string) => take(value))
    .replace(BANG_MARKER, (_match, value: string) => take(value))
    .replace(P_MARKER, (match) => take(match));
  return { text: stripped, priority };
}

const HEADING_WORDS: Array<[RegExp, TaskPriority]> = [
  [/\b(?:not urgent|non-urgent|someday|later|low|backlog|maybe|eventually|parked|waiting|ideas?)\b/i, 3],
  [/\b(?:urgent|asap|critical|now|emergency|blockers?|overdue)\b/i, 0],
  [/\b(?:today|tonight|high|important|this morning|this afternoon)\b/i, 1],
  [/\b(?:this week|tomorrow|soon|next|medium|normal|upcoming)\b/i, 2],
];

/** The priority a section heading implies: `P0 — Urgent` → 0, `Today` → 1, `Later` → 3; undefined when it says nothing. */
export function headingPriority(heading: string): TaskPriority | undefined {
  const marker = /(?<![\w-])P([0-3])(?![\w-])/.exec(heading);
  if (marker) return Number(marker[1]) as TaskPriority;
  const bounded = heading.slice(0, 200);
  for (const [pattern, priority] of HEADING_WORDS) if (pattern.test(bounded)) return priority;
  return undefined;
}

/** Splits `**Title** — note` into title and note; plain text is all title. */
function titleAndNote(text: string): { title: string; note: string | undefined } {
  const bold = /^(\*\*|__)(.+?)\1(.*)$/s.exec(text);
  if (!bold) return { title: text, note: undefined };
  const note = bold[3]!.replace(/^[ \t]*(?:[—–:-][ \t]*)?/, '');
  return { title: bold[2]!, note: note.length > 0 ? note : undefined };
}

/**
 * Parses a task list. Open tasks are top-level `- [ ]` items (also `*`, `+`, `1.`); `[x]`
 * and `[X]` are done and excluded; other boxes (`[-]`, `[/]`) are neither. Priority comes
 * from a marker in the line (`P0`..`P3`, `!high`/`!low`, `(priority: high)`), else from
 * the nearest section heading that implies one, else P2. The result is sorted by priority
 * with ties in file order; titles and notes are single-line and clamped. Linear in the text.
 */
export function parseTasks(text: string, options: { maxChars?: number } = {}): TaskList {
  const maxChars = options.maxChars ?? MAX_TASK_TEXT_CHARS;
  const headingPriorities: Array<TaskPriority | undefined> = [];
  const tasks: Task[] = [];
  let openCount = 0;
  let doneCount = 0;
  for (const { number, text: line } of markdownLines(text)) {
    const heading = headingOf(line);
    if (heading !== undefined) {
      headingPriorities.length = heading.level - 1;
      headingPriorities[heading.level - 1] = headingPriority(heading.text);
      continue;
    }
    if (indentOf(line) >= 2) continue;
    const item = listItemText(line);
    if (item === undefined) continue;
    const box = CHECKBOX.exec(item);
    if (!box) continue;
    if (box[1] !== ' ') {
      doneCount++;
      continue;
    }
    const marked = takeMarkers(box[2]!);
    const { title, note } = titleAndNote(marked.text.trim());
    const cleanTitle = toSingleLine(title, maxChars);
    if (cleanTitle.length === 0) continue;
    const fromHeading = headingPriorities.findLast((priority) => priority !== undefined);
    tasks.push({
      title: cleanTitle,
      note: note === undefined ? undefined : toSingleLine(note, maxChars) || undefined,
      priority: marked.priority ?? fromHeading ?? DEFAULT_TASK_PRIORITY,
      prioritySource: marked.priority !== undefined ? 'marker' : fromHeading !== undefined ? 'heading' : 'default',
      line: number,
    });
    openCount++;
  }
  // Array.prototype.sort is stable, so equal priorities keep file order.
  tasks.sort((a, b) => a.priority - b.priority);
  return { openCount, doneCount, tasks };
}
