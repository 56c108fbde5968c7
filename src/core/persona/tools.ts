/**
 * The tools a voice persona may call, each with a JSON Schema for its arguments (the shape
 * realtime APIs take as a function tool). The voice server implements them; this service
 * only declares them. Read-only tools are the default; write tools exist only when enabled.
 *
 * @see https://json-schema.org/draft/2020-12/json-schema-core
 */

export interface JsonSchema {
  type: 'object';
  properties: Record<string, Record<string, unknown>>;
  required?: string[];
  additionalProperties: false;
}

export interface PersonaTool {
  name: string;
  description: string;
  parameters: JsonSchema;
}

export interface ToolDefinition extends PersonaTool {
  /** True when calling it changes the operator's files; such tools need `allowWriteTools`. */
  writes: boolean;
}

const DATE = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: "Calendar date (YYYY-MM-DD) in the operator's time zone." };

export const TOOL_CATALOG = {
  search_brain: {
    name: 'search_brain',
    description:
      "Search the operator's notes (daily memory, tasks, calendar, messages, meetings, topics) and return the best matching lines with their file and date. Personal data is removed.",
    parameters: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 200, description: 'A few words to look for.' },
        area: {
          type: 'string',
          enum: ['any', 'memory', 'tasks', 'calendar', 'messages', 'meetings', 'topics'],
          default: 'any',
          description: 'Limit the search to one part of the notes.',
        },
        limit: { type: 'integer', minimum: 1, maximum: 10, default: 5, description: 'How many lines to return at most.' },
      },
      required: ['query'],
      additionalProperties: false,
    },
    writes: false,
  },
  get_memory_day: {
    name: 'get_memory_day',
    description: "Read the operator's daily memory notes for one date. Personal data is removed.",
    parameters: {
      type: 'object',
      properties: { date: DATE },
      required: ['date'],
      additionalProperties: false,
    },
    writes: false,
  },
  get_task_list: {
    name: 'get_task_list',
    description: 'List open tasks, most urgent first, each with its priority from P0 (urgent) to P3 (low).',
    parameters: {
      type: 'object',
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: 50, default: 10, description: 'How many tasks to return at most.' },
        minPriority: {
          type: 'string',
          enum: ['P0', 'P1', 'P2', 'P3'],
          default: 'P3',
          description: 'Only tasks at least this urgent.',
        },
      },
      additionalProperties: false,
    },
    writes: false,
  },
  get_calendar: {
    name: 'get_calendar',
    description: "List today's calendar events in time order, with start and end times in the operator's time zone.",
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    writes: false,
  },
  get_unread_messages: {
    name: 'get_unread_messages',
    description: 'List unread inbox messages with the sender and a one-line preview. Personal data is removed.',
    parameters: {
      type: 'object',
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: 20, default: 5, description: 'How many messages to return at most.' },
      },
      additionalProperties: false,
    },
    writes: false,
  },
  get_meeting_notes: {
    name: 'get_meeting_notes',
    description: 'Read the newest meeting notes, or the newest notes from a given date. Personal data is removed.',
    parameters: {
      type: 'object',
      properties: { date: DATE },
      additionalProperties: false,
    },
    writes: false,
  },
  add_task: {
    name: 'add_task',
    description: "Add an open task to the operator's task list. Only after the operator has said yes to the exact wording.",
    parameters: {
      type: 'object',
      properties: {
        title: { type: 'string', minLength: 1, maxLength: 200, description: "The task, in the operator's words." },
        priority: { type: 'string', enum: ['P0', 'P1', 'P2', 'P3'], default: 'P2', description: 'P0 is urgent, P3 is low.' },
      },
      required: ['title'],
      additionalProperties: false,
    },
    writes: true,
  },
  add_memory_note: {
    name: 'add_memory_note',
    description: "Append a short note to today's daily memory. Only after the operator has said yes to the exact wording.",
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
} satisfies Record<string, ToolDefinition>;

export type ToolName = keyof typeof TOOL_CATALOG;

export const TOOL_NAMES = Object.keys(TOOL_CATALOG) as ToolName[];

/** A deep copy of a catalog tool without the `writes` flag, safe to hand to callers. */
export function toolFor(name: ToolName): PersonaTool {
  const { description, parameters } = TOOL_CATALOG[name];
  return { name, description, parameters: structuredClone(parameters) as unknown as JsonSchema };
}

const MENTION = new RegExp(`(?<![A-Za-z0-9_])(${TOOL_NAMES.join('|')})(?![A-Za-z0-9_])`, 'g');

/** The catalog tool names a text mentions, each once, in order of first mention. */
export function mentionedToolNames(text: string): ToolName[] {
  const seen = new Set<ToolName>();
  for (const match of text.matchAll(MENTION)) seen.add(match[1] as ToolName);
  return [...seen];
}

/** Replaces mentions of the given tool names (tools this persona may not call) with a neutral phrase. */
export function withoutToolMentions(text: string, names: ReadonlySet<string>): { text: string; removed: string[] } {
  const removed = new Set<string>();
  const out = text.replace(MENTION, (name: string) => {
    if (!names.has(name)) return name;
    removed.add(name);
    return 'an unavailable tool';
  });
  return { text: out, removed: [...removed] };
}
