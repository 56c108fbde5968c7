import { clampLine } from '../text.js';

/**
 * The state of one tool's translation to Gemini's schema subset (gemini-schema.ts): the
 * input document (for `$ref`s), the bounds, the refs being expanded (for cycles) and what
 * was lost on the way. Internal to the translator; one walk per tool, never shared.
 */

/** Gemini's own type names (`Type` in `@google/genai`), all but `TYPE_UNSPECIFIED` and `NULL`. */
export const GEMINI_TYPES = ['STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT'] as const;
export type GeminiType = (typeof GEMINI_TYPES)[number];

/**
 * A schema node as Gemini's `FunctionDeclaration.parameters` takes it: the OpenAPI 3.0
 * subset of `Schema` in the Gemini API (v1beta) and `@google/genai`. The int64 counts are
 * decimal strings, as the proto's JSON mapping and the SDK type them. A node has a `type`,
 * or (only) `anyOf` branches that each have one.
 *
 * @see https://ai.google.dev/api/caching#Schema
 */
export interface GeminiSchema {
  type?: GeminiType;
  format?: string;
  description?: string;
  nullable?: true;
  enum?: string[];
  properties?: Record<string, GeminiSchema>;
  required?: string[];
  minProperties?: string;
  maxProperties?: string;
  items?: GeminiSchema;
  minItems?: string;
  maxItems?: string;
  minLength?: string;
  maxLength?: string;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  anyOf?: GeminiSchema[];
  default?: string | number | boolean;
}

/** One meaning the translation could not keep in Gemini's schema (it is said in the description, where words can say it). */
export interface SchemaLoss {
  tool: string;
  /** Where, as a JSON Pointer fragment into the tool's input schema (`#/properties/url`). */
  pointer: string;
  /** The JSON Schema keyword whose meaning was lost (`pattern`, `format`, `required`, …). */
  keyword: string;
  /** What was lost, in words. Bounded. */
  lost: string;
}

/** The most nested levels a tool's parameters may have once `$ref`s are inlined. */
export const MAX_SCHEMA_DEPTH = 16;
/** The most schema nodes one tool's parameters may expand to (an inlining bound as much as a size one). */
export const MAX_SCHEMA_NODES = 400;
/**
 * The most bytes one tool's translated parameters take as JSON (UTF-8). Text of any size —
 * enums, descriptions, patterns, defaults — is kept in the order it is met while it fits,
 * and past that dropped or cut, each a loss: the inlining bound (MAX_SCHEMA_NODES) bounds
 * the nodes, this the bytes one `$ref`'d enum or description repeats into.
 */
export const MAX_DECLARATION_BYTES = 64 * 1024;
/** The most losses reported for one tool; the rest are counted in one last line. */
export const MAX_LOSSES = 32;
const MAX_WORDS = 160;
const MAX_NOTES = 400;

/** A node Gemini cannot declare at all (it accepts only null, or nothing): its parent leaves it out. */
export interface Undeclarable {
  none: string;
}
export type Translated = GeminiSchema | Undeclarable;

export function undeclarable<T extends object>(translated: T | Undeclarable): translated is Undeclarable {
  return Object.hasOwn(translated, 'none');
}

/** Thrown inside a walk when a tool cannot be translated at all; the entry point turns it into a result. */
export class Refusal extends Error {}

/** An enum's values as the translation reads them (gemini-schema-typed.ts `enumFacts`). */
export interface EnumFacts {
  /** The JSON types of its values (`integer` for a whole number, which is a `number` too). */
  types: ReadonlySet<string>;
  /** Its distinct values of one type, in order, as they are asked for. */
  ofType: Map<string, unknown[]>;
}

export interface Walk {
  tool: string;
  root: unknown;
  /** `$ref`s being expanded, innermost last: one seen twice is a cycle. */
  refs: string[];
  nodes: number;
  /** The bytes text of any size may take in this translation, and what it has taken (`spend`). */
  budget: number;
  spent: number;
  losses: SchemaLoss[];
  lossCount: number;
  /** What each enum array holds, read once per walk: one `$ref`'d 130 times is not read 130 times. */
  enums: WeakMap<readonly unknown[], EnumFacts>;
  /** Translates a child schema (items, a property, a branch) one level deeper. */
  child(schema: unknown, pointer: string, depth: number): Translated;
}

export function refuse(reason: string): never {
  throw new Refusal(clampLine(reason, MAX_WORDS));
}

/** Records a loss; past MAX_LOSSES only counts it. The same keyword at the same place is recorded once. */
export function lose(walk: Walk, pointer: string, keyword: string, lost: string): void {
  const entry: SchemaLoss = { tool: walk.tool, pointer: clampLine(`#${pointer}`, 120), keyword, lost: clampLine(lost, MAX_WORDS) };
  if (walk.losses.some((seen) => seen.pointer === entry.pointer && seen.keyword === keyword && seen.lost === entry.lost)) return;
  walk.lossCount += 1;
  if (walk.losses.length < MAX_LOSSES) walk.losses.push(entry);
}

/** The UTF-8 bytes of one UTF-16 unit of a string written as JSON (a surrogate counts 3: a pair is 4, a lone one more). */
function jsonUnitBytes(code: number): number {
  if (code === 0x22 || code === 0x5c || code === 0x08 || code === 0x0c || code === 0x0a || code === 0x0d || code === 0x09) return 2;
  if (code < 0x20) return 6;
  if (code < 0x80) return 1;
  return code < 0x800 ? 2 : 3;
}

/** UTF-8 bytes of `value` written as JSON, at least; exact for text without lone surrogates. Linear. */
export function jsonBytes(value: unknown): number {
  if (typeof value === 'string') {
    let bytes = 2;
    for (let i = 0; i < value.length; i++) bytes += jsonUnitBytes(value.charCodeAt(i));
    return bytes;
  }
  const text = JSON.stringify(value) ?? '';
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code >= 0xd800 && code <= 0xdfff ? 2 : 3;
  }
  return bytes;
}

/** Takes `bytes` of the walk's budget for text of any size: false, and nothing taken, when they do not fit. */
export function spend(walk: Walk, bytes: number): boolean {
  if (walk.spent + bytes > walk.budget) return false;
  walk.spent += bytes;
  return true;
}

/** A member's key, quotes and separators as the output writes them, for `spend`. */
export const MEMBER_BYTES = 24;

/**
 * A description as the budget allows: whole when it fits, else cut (with an ellipsis) to what
 * is left, a loss; undefined when nothing is left. Reads at most what fits.
 */
export function fitDescription(walk: Walk, pointer: string, text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const room = walk.budget - walk.spent - MEMBER_BYTES;
  let bytes = 0;
  let fits = 0;
  while (fits < text.length && bytes + jsonUnitBytes(text.charCodeAt(fits)) <= room) bytes += jsonUnitBytes(text.charCodeAt(fits++));
  if (fits === text.length) {
    walk.spent += bytes + MEMBER_BYTES;
    return text;
  }
  lose(walk, pointer, 'description', `cut to fit the ${MAX_DECLARATION_BYTES / 1024} KiB a tool's declaration may take`);
  // The ellipsis takes 3 bytes where the last char took at least 1.
  const cut = clampLine(text, fits - 2);
  if (cut === '') return undefined;
  walk.spent += jsonBytes(cut) + MEMBER_BYTES - 2;
  return cut;
}

/** A JSON value in words for a description or a warning: its JSON text, clamped. */
export function shown(value: unknown, maxChars = 60): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    text = undefined;
  }
  return clampLine(text ?? String(value), maxChars);
}

/** `a`, `a or b`, `a, b or c` of shown values, the list itself bounded. */
export function shownList(values: readonly unknown[]): string {
  const items = values.slice(0, 8).map((value) => shown(value, 40));
  if (values.length > 8) items.push(`${values.length - 8} more`);
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

/** The description of a node: the input's own, then what Gemini's schema could not say, bounded. */
export function describe(own: unknown, notes: readonly string[]): string | undefined {
  const said = notes.length === 0 ? '' : clampLine(notes.join(' '), MAX_NOTES);
  const base = typeof own === 'string' ? own.trim() : '';
  const text = base && said ? `${base} ${said}` : base || said;
  return text === '' ? undefined : text;
}

/** JSON Pointer escaping of one reference token (RFC 6901). */
export function token(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON Schema count (`minLength`, `maxItems`, …) as Gemini's int64 string; refuses a malformed one. */
export function count(schema: Record<string, unknown>, keyword: string): string | undefined {
  const value = schema[keyword];
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) refuse(`${keyword} is not a non-negative integer`);
  return Number.isSafeInteger(value) ? String(value) : undefined;
}

/** A JSON Schema number bound; refuses a malformed one. */
export function bound(schema: Record<string, unknown>, keyword: string): number | undefined {
  const value = schema[keyword];
  if (value === undefined || typeof value === 'boolean') return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) refuse(`${keyword} is not a finite number`);
  return value;
}
