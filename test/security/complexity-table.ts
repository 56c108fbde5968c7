/**
 * Every parser of brain or caller text, and the adversarial inputs it must take in linear
 * time (issue 27). A new parser is one row: its name, the call, and the shapes that
 * put an adversarial payload where the parser looks (a task line, a heading, front matter…).
 * Each payload family is measured at n and 8n chars (test/security/complexity.test.ts).
 */
import { ConnectionsFileSchema } from '../../schemas/connections-file.js';
import { PolicyFileSchema } from '../../schemas/policy.js';
import { ToolsFileSchema } from '../../schemas/tools-file.js';
import { compile } from '../../src/core/compile.js';
import { parseBlueprint, frontMatterRevision } from '../../src/core/governance.js';
import { indexMemoryNotes, parseMemoryNotes, rankIndexedMemoryNotes } from '../../src/core/memory-notes.js';
import { buildMarsLiveContext, buildVenusLiveContext } from '../../src/core/persona/live-context.js';
import { toGeminiParameters } from '../../src/core/persona/gemini-schema.js';
import { getPersona } from '../../src/sources/persona/request.js';
import { renderPersona } from '../../src/core/persona/render.js';
import { mentionedToolNames, resolveToolReferences } from '../../src/core/persona/tools.js';
import { clampRedacted, scrubPii } from '../../src/core/pii.js';
import { encodeInputLine, escapeTrusted, labelSource, normaliseText, singleLine } from '../../src/core/render.js';
import { parseCalendar } from '../../src/core/signals/calendar.js';
import { parseInbox } from '../../src/core/signals/inbox.js';
import { emotionWords } from '../../src/core/signals/memory.js';
import { hasBodyLines, looksBinary, markdownLines } from '../../src/core/signals/markdown.js';
import { summarizeMeeting } from '../../src/core/signals/meetings.js';
import { pickEmotionLines, recurringThemes, soulCore } from '../../src/core/signals/memory.js';
import { parseTasks } from '../../src/core/signals/tasks.js';
import { sanitizeTopicName, topicExcerpt } from '../../src/core/signals/topic.js';
import { clampLine, cutAtLineBoundary, keepNewest, quoteForWarning, stripHtmlComments, toAscii, toSingleLine } from '../../src/core/text.js';
import { parseInstant } from '../../src/core/time.js';
import { heartbeatTimeZone, isValidTimeZone } from '../../src/core/zones.js';
import { DEFAULT_POLICY } from '../../src/core/policy.js';
import { diffHunks, diffLines } from '../../ui/src/text-diff.js';

/** Payloads of about `n` chars that have made patterns and scans go super-linear. */
export const FAMILIES: Record<string, (n: number) => string> = {
  spaces: (n) => `a${' '.repeat(n)}b`,
  'spaces and tabs': (n) => `a${' \t'.repeat(n >> 1)}:`,
  digits: (n) => `x ${'1'.repeat(n)} a…`,
  'digit groups': (n) => `${'1 '.repeat(n >> 1)}x`,
  'at signs': (n) => `${'a@'.repeat(n >> 1)}-`,
  dots: (n) => `${'a.'.repeat(n >> 1)}@`,
  dashes: (n) => `${'-'.repeat(n)}x`,
  hashes: (n) => `${'# '.repeat(n >> 1)}x`,
  'open brackets': (n) => '(['.repeat(n >> 1),
  'unclosed comments': (n) => '<!--'.repeat(n >> 2),
  emphasis: (n) => '**_'.repeat(Math.floor(n / 3)),
  'label markers': (n) => '<< cc'.repeat(Math.floor(n / 5)),
  'phone-ish': (n) => '+1 (415) 555-0100 2026-11-30 '.repeat(Math.floor(n / 28)),
  'mixed words': (n) => 'ache missed call_me `search` a@b.co 14:00 ## '.repeat(Math.floor(n / 45)),
  'many lines': (n) => '- [ ] 1\n'.repeat(n >> 3),
  'bidi and controls': (n) => '\u202e\u2066\u0007\u200b x'.repeat(Math.floor(n / 6)),
};

export interface ComplexityRow {
  name: string;
  /** Puts a payload where the parser looks; each shape is measured with every family. */
  shapes: Array<(payload: string) => string>;
  run: (text: string) => unknown;
}

const whole = (payload: string) => payload;
const NOW = new Date('2026-11-30T17:05:00Z');
const CLOCK = { now: NOW, timeZone: 'UTC' };
const names = new Map([['search', 'search'], ['get_page', 'get_page']]);
const mars = getPersona('mars')!;

const sides = new Map<string, string[]>();
/**
 * What the diff row compares a text with, built once per text (the last two kept: a row is
 * timed at two sizes in alternation), so the row times the diff and not the reversal of a text.
 */
function othersides(text: string): string[] {
  let others = sides.get(text);
  if (others === undefined) {
    if (sides.size >= 2) sides.delete(sides.keys().next().value!);
    others = [`${text}\nx`, [...text].reverse().join(''), text.replaceAll('a', 'b')];
    sides.set(text, others);
  }
  return others;
}

export const ROWS: ComplexityRow[] = [
  {
    // A changed block's text against the previous run's (the compare page, `context-compiler diff`): one line added, every line changed, every char changed.
    name: 'diffLines / diffHunks (block text diff)',
    shapes: [whole, (p) => `${p}\n`.repeat(4), (p) => p.split('').join('\n')],
    run: (text) => [...othersides(text).map((other) => diffLines(text, other)), diffHunks([{ op: 'added', text }])],
  },
  { name: 'parseTasks', shapes: [whole, (p) => `- [ ] ${p}\n`, (p) => `## ${p}\n- [ ] **${p}** — ${p} (priority: ${p}) !${p} P${p}\n`], run: (text) => parseTasks(text) },
  { name: 'parseCalendar', shapes: [whole, (p) => `# ${p}\n- 09:00 ${p}\n`, (p) => `- 09:00 -${p}\n- ${p}:00 ${p}\n`], run: (text) => parseCalendar(text) },
  { name: 'parseInbox', shapes: [whole, (p) => `- [unread] ${p}: hi\n`, (p) => `- [unread] ${p}\n`], run: (text) => parseInbox(text) },
  { name: 'summarizeMeeting', shapes: [whole, (p) => `# ${p} — 2026-11-27\n${p}\n`, (p) => `Summary: ${p}\n${p}\n`, (p) => `**${p}**: x\n${p}`], run: (text) => summarizeMeeting('2026-11-27-review.md', text) },
  { name: 'markdownLines / hasBodyLines / looksBinary', shapes: [whole, (p) => `\`\`\`\n${p}`, (p) => `${p}\n---\n* * ${p}`], run: (text) => [markdownLines(text).length, hasBodyLines(text), looksBinary(text)] },
  { name: 'pickEmotionLines / recurringThemes', shapes: [whole, (p) => `- ${p} ache\n`], run: (text) => [pickEmotionLines([{ date: '2026-11-30', text }]), recurringThemes([{ date: '2026-11-30', text }, { date: '2026-11-29', text }])] },
  { name: 'emotionWords (lexicon)', shapes: [whole], run: (text) => emotionWords(text) },
  { name: 'soulCore', shapes: [whole, (p) => `# Soul\n${p}.\n\n## ${p}\n- ${p}`], run: (text) => soulCore(text) },
  { name: 'parseMemoryNotes / rankIndexedMemoryNotes', shapes: [whole, (p) => `## a${p}b\n${p}\n`, (p) => `## ${p} ##\n`, (p) => '## a\n'.repeat(p.length >> 2)], run: (text) => [parseMemoryNotes('workers/w/memory/a.md', text), rankIndexedMemoryNotes([indexMemoryNotes('workers/w/memory/a.md', text)], text.slice(0, 2000))] },
  { name: 'parseBlueprint (front matter)', shapes: [whole, (p) => `---\nrevision: a${p}\n---\nbody`, (p) => `---\n${p}\nrevision: "${p}'\n---\n`], run: (text) => [parseBlueprint(text, '0'.repeat(64)), frontMatterRevision(text)] },
  { name: 'topicExcerpt / sanitizeTopicName', shapes: [whole, (p) => `${p}\r\n<!--${p}`], run: (text) => [topicExcerpt(text), sanitizeTopicName(text)] },
  { name: 'scrubPii', shapes: [whole, (p) => `call ${p} order ${p} https://x.example/${p}`], run: (text) => scrubPii(text) },
  { name: 'text: toSingleLine / clampLine / cutAtLineBoundary / keepNewest / stripHtmlComments / clampRedacted', shapes: [whole], run: (text) => [toSingleLine(text, 200), clampLine(text, 200), cutAtLineBoundary(text, 2000), keepNewest(text, 2000), stripHtmlComments(text), clampRedacted(text, 200)] },
  { name: 'toAscii (sanitize=ascii)', shapes: [whole, (p) => `é—“${p}”…`], run: (text) => toAscii(text) },
  { name: 'quoteForWarning', shapes: [whole], run: (text) => quoteForWarning(text) },
  { name: 'render: normaliseText / escapeTrusted / singleLine / encodeInputLine / labelSource', shapes: [whole], run: (text) => [normaliseText(text), escapeTrusted(text), singleLine(text, 1000), encodeInputLine('task', 'content', 'request:task', text), labelSource(text)] },
  { name: 'time-zone spellings and instants', shapes: [whole, (p) => `US/${p}`, (p) => `GMT+${p}`], run: (text) => [isValidTimeZone(text.slice(0, 64)), heartbeatTimeZone(JSON.stringify({ currentLocation: { timezone: text } })), parseInstant(text)] },
  { name: 'venus live context (tasks, calendar, inbox, meeting)', shapes: [(p) => `- [ ] ${p}\n- 09:00 ${p}\n- [unread] ${p}: hi\n`], run: (text) => buildVenusLiveContext({ tasks: text, calendar: text, inbox: text, meeting: { fileName: '2026-11-27-review.md', text } }, CLOCK) },
  { name: 'mars live context (memory, SOUL)', shapes: [(p) => `- ${p} ache\n${p}\n`], run: (text) => buildMarsLiveContext({ soul: text, daily: [{ date: '2026-11-30', text }, { date: '2026-11-29', text }] }, CLOCK) },
  { name: 'persona override and tool references', shapes: [whole, (p) => `Use \`search\` ${p}. Then get_${p}x. ${p}\n`], run: (text) => [renderPersona(mars, { overrideText: text }), resolveToolReferences(text, names), mentionedToolNames(text)] },
  {
    name: 'brain JSON: tools.json, policy.json, connections.json',
    shapes: [(p) => JSON.stringify({ tools: { [p.slice(0, 64)]: { description: p } }, [p]: 1 }), (p) => JSON.stringify([{ name: 'a', hosts: [`a.${p}`], methods: ['GET'], env: 'A', usage: p }])],
    run: (text) => {
      const json = JSON.parse(text) as unknown;
      return [ToolsFileSchema.safeParse(json).success, PolicyFileSchema.safeParse(json).success, ConnectionsFileSchema.safeParse(json).success];
    },
  },
  {
    // Tool parameters declared to Gemini: an allOf of two enums (intersected), and one enum $ref'd by 8 parameters (inlined within the byte cap).
    name: 'toGeminiParameters (enums in allOf and $ref)',
    shapes: [whole],
    run: (text) => {
      const values = Array.from({ length: text.length >> 3 }, (_, i) => `${i}${text.slice(i * 8, i * 8 + 8)}`);
      const refs = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`p${i}`, { $ref: '#/$defs/e' }]));
      return [
        toGeminiParameters('t', { type: 'object', properties: { x: { allOf: [{ enum: values }, { enum: [...values].reverse() }] } } }),
        toGeminiParameters('t', { type: 'object', $defs: { e: { enum: values } }, properties: refs }),
      ];
    },
  },
  {
    name: 'compile (caller task, message and evidence)',
    shapes: [whole],
    run: (text) =>
      compile({
        subject: { kind: 'worker', id: 'w' },
        surface: 'chat',
        phase: 'start',
        policy: { ...DEFAULT_POLICY, limitChars: 1_000_000, blocks: { ...DEFAULT_POLICY.blocks, identity: 1_000_000, memory: 1_000_000, task: 1_000_000, evidence: 1_000_000 } },
        identity: { source: 'workers/w/identity.md', text: `You are w. ${text.slice(0, 4000)}`, brainDerived: true },
        memory: [{ source: 'workers/w/memory/a.md#a', text, brainDerived: true }],
        task: { source: 'request:task', text },
        evidence: [{ sourceRef: text.slice(0, 512), content: text }],
      }),
  },
];
