import { scrubPii, type RedactionCounts } from '../pii.js';
import { quoteForWarning, toSingleLine } from '../text.js';

/**
 * The tools a voice persona may advertise, each with a strict JSON Schema for its
 * arguments, in the shape realtime APIs take (`{type: "function", name, description,
 * parameters}`). The voice server dispatches them; this service only declares them, so
 * the default names are exactly the voice server's read-only allow-list. Write-shaped
 * tools exist only when the operator opts in by configuration, and ops that write pages,
 * run jobs or upload files are never offered at all.
 *
 * @see https://json-schema.org/draft/2020-12/json-schema-core
 * @see https://platform.openai.com/docs/guides/realtime-conversations#function-calling
 */

// A type, not an interface, so that a tool is also a plain JSON record (the trace's ToolSchema).
export type JsonSchema = {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
  additionalProperties: false;
};

/** A tool as a realtime session takes it. */
export interface PersonaTool {
  type: 'function';
  name: string;
  description: string;
  parameters: JsonSchema;
}

export interface ToolDefinition {
  description: string;
  parameters: JsonSchema;
  /** True when calling it changes something (a reminder, a note); such tools need the write opt-in. */
  writes: boolean;
}

/** The voice server's read-only allow-list: the default tool names. */
export const READ_TOOL_NAMES = [
  'search',
  'query',
  'get_page',
  'list_pages',
  'find_experts',
  'get_recent_salience',
  'get_recent_transcripts',
  'read_article',
] as const;

/** Write-shaped but bounded ops the voice server can be opted in to. */
export const WRITE_TOOL_NAMES = ['set_reminder', 'log_to_brain', 'enrich_request'] as const;

export type ReadToolName = (typeof READ_TOOL_NAMES)[number];
export type WriteToolName = (typeof WRITE_TOOL_NAMES)[number];
export type ToolName = ReadToolName | WriteToolName;

/**
 * Ops a voice session never gets, whatever the configuration or the operator's file says,
 * with what they would do: a prompt injection must not reach them through a voice.
 */
export const REFUSED_TOOLS: Readonly<Record<string, string>> = Object.freeze({
  put_page: 'writes pages',
  delete_page: 'writes pages',
  restore_page: 'writes pages',
  add_link: 'writes pages',
  remove_link: 'writes pages',
  add_tag: 'writes pages',
  remove_tag: 'writes pages',
  add_timeline_entry: 'writes pages',
  sync_brain: 'writes pages',
  apply_migrations: 'writes pages',
  submit_job: 'runs jobs',
  retry_job: 'runs jobs',
  submit_agent: 'runs jobs',
  work: 'runs jobs',
  shell: 'runs jobs',
  file_upload: 'uploads files',
  file_url: 'uploads files',
  put_raw_data: 'uploads files',
});

/** What a refused op would do (`writes pages`), or undefined for any other name — `constructor` included. */
export function refusedOp(name: string): string | undefined {
  return Object.hasOwn(REFUSED_TOOLS, name) ? REFUSED_TOOLS[name] : undefined;
}

const SLUG = '^[a-z0-9][a-z0-9._-]*(?:/[a-z0-9][a-z0-9._-]*)*$';
const DATE = '^\\d{4}-\\d{2}-\\d{2}$';

const limit = (max: number, fallback: number) => ({
  type: 'integer',
  minimum: 1,
  maximum: max,
  default: fallback,
  description: 'How many results to return at most.',
});

const days = (max: number, fallback: number) => ({
  type: 'integer',
  minimum: 1,
  maximum: max,
  default: fallback,
  description: 'How many days back to look.',
});

export const TOOL_CATALOG: Readonly<Record<ToolName, ToolDefinition>> = {
  search: {
    description:
      "Keyword lookup across the operator's brain pages (people, companies, meetings, notes, topics). Returns the best matching pages with their slug and a short snippet. Fast; best for names and exact terms.",
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 300, description: 'What to look for: a name, a term or a short phrase.' },
        limit: limit(20, 5),
      },
      required: ['query'],
      additionalProperties: false,
    },
    writes: false,
  },
  query: {
    description:
      'Ask the brain a question in plain words. It expands the question, retrieves relevant passages and returns them with their page slugs. Slower than a keyword lookup; best for open questions such as what was decided about something.',
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 500, description: 'The question, in plain words.' },
        limit: limit(20, 5),
      },
      required: ['query'],
      additionalProperties: false,
    },
    writes: false,
  },
  get_page: {
    description:
      "Read one brain page in full by its slug, such as a person's page under people/ or a company's under companies/, as an earlier lookup returned it. Use it to brief the operator on someone or to read a page to them.",
    parameters: {
      type: 'object',
      properties: {
        slug: { type: 'string', minLength: 1, maxLength: 200, pattern: SLUG, description: 'The page slug: lowercase path segments joined by slashes.' },
        fuzzy: { type: 'boolean', default: false, description: 'Accept the closest matching slug when there is no exact one.' },
      },
      required: ['slug'],
      additionalProperties: false,
    },
    writes: false,
  },
  list_pages: {
    description:
      'List brain pages, most recently updated first, optionally only one type or tag, or only pages updated after a date. Returns slugs and titles, not content.',
    parameters: {
      type: 'object',
      properties: {
        type: { type: 'string', pattern: '^[a-z][a-z0-9-]{0,39}$', description: 'Only pages of this type, such as person, company, meeting or concept.' },
        tag: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,63}$', description: 'Only pages with this tag.' },
        updated_after: { type: 'string', pattern: DATE, description: 'Only pages updated after this date (YYYY-MM-DD).' },
        sort: { type: 'string', enum: ['updated_desc', 'updated_asc', 'created_desc', 'slug'], default: 'updated_desc', description: 'The order of the list.' },
        limit: limit(50, 10),
      },
      additionalProperties: false,
    },
    writes: false,
  },
  find_experts: {
    description:
      "Find the people in the operator's network who know most about a topic, ranked by expertise and how recently they were in touch. Returns names with their page slugs.",
    parameters: {
      type: 'object',
      properties: {
        topic: { type: 'string', minLength: 1, maxLength: 200, description: 'The topic, in plain words.' },
        limit: limit(10, 5),
      },
      required: ['topic'],
      additionalProperties: false,
    },
    writes: false,
  },
  get_recent_salience: {
    description:
      'The pages the operator has been most involved with lately, ranked by how much attention they got. Best for what has been going on or what stands out this week.',
    parameters: {
      type: 'object',
      properties: {
        days: days(90, 14),
        limit: limit(20, 10),
        slugPrefix: { type: 'string', maxLength: 100, pattern: SLUG, description: 'Only pages whose slug starts with this, such as people.' },
      },
      additionalProperties: false,
    },
    writes: false,
  },
  get_recent_transcripts: {
    description:
      'Recent meeting and voice-note transcripts, newest first, as short summaries unless the full text is asked for. Best for what was said in a recent meeting.',
    parameters: {
      type: 'object',
      properties: {
        days: days(30, 7),
        limit: limit(20, 5),
        summary: { type: 'boolean', default: true, description: 'Return the first few sentences of each transcript instead of all of it.' },
      },
      additionalProperties: false,
    },
    writes: false,
  },
  read_article: {
    description: 'Fetch a web page or article by its link and return its readable text, to talk it through. Only http and https links.',
    parameters: {
      type: 'object',
      properties: {
        url: { type: 'string', minLength: 10, maxLength: 2048, pattern: '^https?://\\S+$', description: 'The full link, starting with http:// or https://.' },
      },
      required: ['url'],
      additionalProperties: false,
    },
    writes: false,
  },
  set_reminder: {
    description: 'Set a reminder for the operator at a date and time. Only after the operator has said yes to the exact wording and time.',
    parameters: {
      type: 'object',
      properties: {
        text: { type: 'string', minLength: 1, maxLength: 200, description: "What to be reminded of, in the operator's words." },
        at: {
          type: 'string',
          format: 'date-time',
          description: "When, as an ISO 8601 date and time with the offset of the operator's time zone, such as 2026-12-01T09:00:00-08:00.",
        },
      },
      required: ['text', 'at'],
      additionalProperties: false,
    },
    writes: true,
  },
  log_to_brain: {
    description: "Add a short note to today's entry in the operator's brain. Only after the operator has said yes to the exact wording.",
    parameters: {
      type: 'object',
      properties: {
        text: { type: 'string', minLength: 1, maxLength: 1000, description: "The note, in the operator's words." },
      },
      required: ['text'],
      additionalProperties: false,
    },
    writes: true,
  },
  enrich_request: {
    description:
      "Ask the brain's background workers to find out more about a person or company and update their page later. Only after the operator has said yes.",
    parameters: {
      type: 'object',
      properties: {
        subject: { type: 'string', minLength: 1, maxLength: 200, description: 'The person or company, as the operator named them.' },
        slug: { type: 'string', maxLength: 200, pattern: SLUG, description: 'Their page slug, when a lookup found one.' },
        note: { type: 'string', maxLength: 500, description: 'What to find out.' },
      },
      required: ['subject'],
      additionalProperties: false,
    },
    writes: true,
  },
};

export const TOOL_NAMES = [...READ_TOOL_NAMES, ...WRITE_TOOL_NAMES] as readonly ToolName[];

export function isToolName(name: string): name is ToolName {
  return Object.hasOwn(TOOL_CATALOG, name);
}

/** The shape of a function name realtime APIs accept. */
export const FUNCTION_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** `personas/tools.json` after validation (see `ToolsFileSchema` in schemas/tools-file.ts). */
export interface ToolsFile {
  /** Per persona: the catalogue tools it advertises, replacing its default set. */
  personas?: Partial<Record<string, { tools: readonly string[] }>>;
  /** Per catalogue tool: the name the operator's dispatcher calls it, and/or other words for it. */
  tools?: Partial<Record<string, { name?: string | undefined; description?: string | undefined }>>;
}

export const TOOLS_FILE = 'personas/tools.json';

/** One tool a persona offers: its catalogue name, and what the session advertises. */
export interface OfferedTool {
  canonical: ToolName;
  tool: PersonaTool;
  writes: boolean;
}

export interface ToolChoice {
  /** The persona's own default set (read tools, then write tools when they may be offered). */
  readTools: readonly ReadToolName[];
  writeTools: readonly WriteToolName[];
  /** False for a persona that never offers write tools, whatever the configuration. */
  mayWrite: boolean;
}

export interface ToolSelection {
  /** In the persona's (or the operator's) order. */
  offered: OfferedTool[];
  /** Canonical and exposed names → the exposed name, for resolving references in prose. */
  names: ReadonlyMap<string, string>;
  /** True when the operator's file changed this persona's set, a name or a description. */
  customised: boolean;
  warnings: string[];
  /** Emails and phone numbers removed from operator descriptions. */
  redactions: RedactionCounts;
}

/** A deep copy of a catalogue tool under `name`, safe to hand to callers. */
function toolFor(canonical: ToolName, name: string, description: string): PersonaTool {
  return { type: 'function', name, description, parameters: structuredClone(TOOL_CATALOG[canonical].parameters) };
}

/**
 * The tools a persona offers. Starts from the persona's defaults (write tools only with
 * `allowWriteTools` and only for a persona that may write) or the operator's list in
 * `personas/tools.json`, then applies the file's renames and rewordings. Refused ops,
 * unknown names, write tools without the opt-in, clashing or unsafe renames are left out,
 * each with a warning. Exposed names are unique. Deterministic; never throws.
 */
export function selectTools(
  personaKey: string,
  choice: ToolChoice,
  options: { file?: ToolsFile | undefined; allowWriteTools: boolean },
): ToolSelection {
  const warnings: string[] = [];
  const file = options.file;
  const listed = file?.personas?.[personaKey]?.tools;
  const wanted: readonly string[] = listed ?? [...choice.readTools, ...(options.allowWriteTools && choice.mayWrite ? choice.writeTools : [])];
  const chosen: ToolName[] = [];
  const where = `${TOOLS_FILE}: personas.${personaKey}.tools`;
  for (const name of wanted) {
    if (chosen.includes(name as ToolName)) continue;
    const refused = refusedOp(name);
    if (refused !== undefined) {
      warnings.push(`${where}: ${name} ${refused}; a voice session never offers it`);
    } else if (!isToolName(name)) {
      warnings.push(`${where}: ${name} is not a tool the voice server dispatches; left out`);
    } else if (TOOL_CATALOG[name].writes && !choice.mayWrite) {
      warnings.push(`${where}: ${name} changes things, and ${personaKey} never offers tools that do; left out`);
    } else if (TOOL_CATALOG[name].writes && !options.allowWriteTools) {
      warnings.push(`${where}: ${name} changes things and needs VOICE_WRITE_TOOLS=true; left out`);
    } else {
      chosen.push(name);
    }
  }

  const exposed = new Map<ToolName, string>(chosen.map((name) => [name, name]));
  let customised = listed !== undefined;
  for (const [canonical, entry] of Object.entries(file?.tools ?? {})) {
    if (entry === undefined) continue;
    if (!isToolName(canonical)) {
      const refused = refusedOp(canonical);
      warnings.push(`${TOOLS_FILE}: tools.${canonical}: ${refused === undefined ? 'not a tool the voice server dispatches' : `${refused}; never offered`}; ignored`);
      continue;
    }
    const rename = entry.name;
    if (rename === undefined || rename === canonical || !exposed.has(canonical)) continue;
    const clash =
      !FUNCTION_NAME.test(rename) ? 'is not a function name' :
      refusedOp(rename) !== undefined ? `is the name of an op that ${refusedOp(rename)}` :
      isToolName(rename) ? 'is the name of another tool' :
      [...exposed.values()].includes(rename) ? 'is already taken' :
      undefined;
    if (clash !== undefined) {
      warnings.push(`${TOOLS_FILE}: tools.${canonical}.name: "${rename}" ${clash}; kept ${canonical}`);
      continue;
    }
    exposed.set(canonical, rename);
    customised = true;
  }

  const names = new Map<string, string>();
  for (const [canonical, name] of exposed) {
    names.set(canonical, name);
    names.set(name, name);
  }
  const redactions: RedactionCounts = { email: 0, phone: 0 };
  const offered: OfferedTool[] = chosen.map((canonical) => {
    const name = exposed.get(canonical)!;
    const given = file?.tools?.[canonical]?.description;
    let description = TOOL_CATALOG[canonical].description;
    if (given !== undefined) {
      const scrubbed = scrubPii(toSingleLine(given, 1000));
      const resolved = resolveToolReferences(scrubbed.text, names);
      if (resolved.unknown.length > 0) {
        warnings.push(`${TOOLS_FILE}: tools.${canonical}.description names ${describeUnknown(resolved.unknown)}; that sentence was left out`);
      }
      if (resolved.text.length > 0) {
        description = resolved.text;
        redactions.email += scrubbed.counts.email;
        redactions.phone += scrubbed.counts.phone;
        customised = true;
      } else {
        warnings.push(`${TOOLS_FILE}: tools.${canonical}.description is empty once cleaned; kept the built-in description`);
      }
    }
    return { canonical, tool: toolFor(canonical, name, description), writes: TOOL_CATALOG[canonical].writes };
  });
  return { offered, names, customised, warnings, redactions };
}

/** `a`, `a or b`, `a, b or c`. */
export function orList(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

/** `a`, `a and b`, `a, b and c`. */
export function andList(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`;
}

function describeUnknown(unknown: readonly string[]): string {
  return `${unknown.length === 1 ? 'a tool' : 'tools'} this persona does not offer (${quoteForWarning(unknown.join(', '))})`;
}

/**
 * A tool reference in operator text: a name in backticks (`` `search` ``), or a snake_case
 * word (`get_calendar`), which no English prose uses. Not inside a path or file name.
 */
const REFERENCE = /`([A-Za-z][A-Za-z0-9_-]{0,63})`|(?<![A-Za-z0-9_`/.@-])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![A-Za-z0-9_`/@-]|\.[A-Za-z0-9])/g;
const SENTENCE_END = /(?<=[.!?]["')\]]?)[ \t]+(?=\S)/;

export interface ResolvedReferences {
  text: string;
  /** Names referenced that are not offered, each once, in order. */
  unknown: string[];
}

/**
 * Resolves tool references in operator prose: a reference to an offered tool (by its
 * catalogue or its exposed name) becomes the exposed name, bare; a sentence that refers to
 * anything else is left out whole, so the text never names a tool the session lacks. A line
 * left empty goes too. Deterministic, linear.
 */
export function resolveToolReferences(text: string, names: ReadonlyMap<string, string>): ResolvedReferences {
  const unknown: string[] = [];
  const lines: string[] = [];
  for (const line of text.split('\n')) {
    if (!line.includes('`') && !line.includes('_')) {
      lines.push(line);
      continue;
    }
    const marker = /^(\s*(?:[-*+]|\d{1,3}[.)])\s+)/.exec(line)?.[1] ?? '';
    const kept: string[] = [];
    for (const sentence of line.slice(marker.length).split(SENTENCE_END)) {
      let bad = false;
      const out = sentence.replace(REFERENCE, (match, quoted: string | undefined, bare: string | undefined) => {
        const name = (quoted ?? bare)!;
        const exposed = names.get(name);
        if (exposed !== undefined) return exposed;
        // Backticked words that are not tool-shaped stay prose; snake_case always names a tool.
        if (quoted !== undefined && !quoted.includes('_') && !isToolName(quoted) && refusedOp(quoted) === undefined) return match;
        bad = true;
        if (!unknown.includes(name)) unknown.push(name);
        return match;
      });
      if (!bad) kept.push(out);
    }
    const body = kept.join(' ').trim();
    if (body.length > 0) lines.push(`${marker}${body}`);
    else if (line.slice(marker.length).trim().length === 0) lines.push(line);
  }
  return { text: lines.join('\n').replace(/\n{3,}/g, '\n\n').trim(), unknown };
}

/**
 * Every tool name a prompt could mention: the catalogue and the refused ops whose names
 * are not plain English words (`work`, `shell`), which prose may use freely.
 */
export const KNOWN_TOOL_NAMES: readonly string[] = [...TOOL_NAMES, ...Object.keys(REFUSED_TOOLS).filter((name) => name.includes('_'))];

/** A pattern that finds any of `names` as a whole word (longest first); undefined for none. */
export function toolNamesPattern(names: Iterable<string>): RegExp | undefined {
  const wanted = [...new Set(names)].sort((a, b) => b.length - a.length).map((name) => name.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&'));
  return wanted.length === 0 ? undefined : new RegExp(`(?<![A-Za-z0-9_-])(${wanted.join('|')})(?![A-Za-z0-9_-])`, 'g');
}

/**
 * The names from `names` (default: every known tool name) that `text` mentions as whole
 * words, each once, in order of first mention. Tests use it to hold the prompt to the tools.
 */
export function mentionedToolNames(text: string, names: Iterable<string> = KNOWN_TOOL_NAMES): string[] {
  const pattern = toolNamesPattern(names);
  if (pattern === undefined) return [];
  const seen = new Set<string>();
  for (const match of text.matchAll(pattern)) seen.add(match[1]!);
  return [...seen];
}
