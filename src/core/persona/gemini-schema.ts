import { canonicalJson, mergeSchemas, resolveLocalRef } from './json-schema-merge.js';
import { enumFacts, jsonTypeOf, NO_PARAMETERS, typed, type Allowed, type JsonType, type Typed } from './gemini-schema-typed.js';
import {
  describe,
  fitDescription,
  isPlainObject,
  jsonBytes,
  lose,
  MAX_DECLARATION_BYTES,
  MAX_SCHEMA_DEPTH,
  MAX_SCHEMA_NODES,
  refuse,
  Refusal,
  shown,
  undeclarable,
  type GeminiSchema,
  type SchemaLoss,
  type Translated,
  type Walk,
} from './gemini-schema-walk.js';
import type { PersonaTool } from './tools.js';

export { GEMINI_TYPES, MAX_DECLARATION_BYTES, MAX_LOSSES, MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES, type GeminiSchema, type GeminiType, type SchemaLoss } from './gemini-schema-walk.js';
export { portablePattern } from './gemini-schema-typed.js';

/**
 * Our tool parameters (JSON Schema, as OpenAI's realtime tools take them) in the subset of
 * OpenAPI 3.0 that Gemini's `FunctionDeclaration.parameters` takes. Gemini Live refuses a
 * whole setup over one field it does not know (`Invalid JSON payload received. Unknown
 * name "additionalProperties"`) or one value it does not take (`format: only 'enum' and
 * 'date-time' are supported for STRING type`), so the output holds only Gemini's own
 * keywords with values it takes, and whatever meaning cannot travel in them is said in the
 * node's description and reported as a loss. docs/providers.md has the keyword table.
 *
 * @see https://ai.google.dev/api/caching#Schema
 * @see https://ai.google.dev/gemini-api/docs/function-calling#function_declarations
 */

/** A function as Gemini Live's setup declares it (`tools: [{functionDeclarations}]`). */
export interface GeminiFunctionDeclaration {
  name: string;
  description: string;
  /** Absent for a function without parameters (Gemini refuses an OBJECT with no properties). */
  parameters?: GeminiSchema;
}

export type GeminiParameters =
  | { ok: true; parameters: GeminiSchema | undefined; losses: SchemaLoss[]; unreported: number }
  | { ok: false; reason: string };

const ONLY_NULL = 'allows only null';
const JSON_TYPES: ReadonlySet<string> = new Set(['string', 'integer', 'number', 'boolean', 'array', 'object', 'null']);
/** Gemini's function names: a letter or _, then letters, digits, _ . : or -, at most 128. */
export const GEMINI_FUNCTION_NAME = /^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$/;

/**
 * Translates one tool's parameters. `ok: false` (with the reason) when they cannot be
 * declared to Gemini at all: not one object, a `$ref` cycle or one outside the document,
 * deeper than MAX_SCHEMA_DEPTH or larger than MAX_SCHEMA_NODES once inlined, a malformed
 * keyword. Otherwise the parameters (undefined for none), at most MAX_DECLARATION_BYTES as
 * JSON, and every loss of meaning, each with the tool, a JSON Pointer and what was lost,
 * bounded. Pure, deterministic, never throws; the input is not changed.
 */
export function toGeminiParameters(tool: string, parameters: unknown): GeminiParameters {
  const first = translateWithin(tool, parameters, MAX_DECLARATION_BYTES);
  if (!first.ok || first.parameters === undefined) return first.result;
  const bytes = jsonBytes(first.parameters);
  if (bytes <= MAX_DECLARATION_BYTES) return first.result;
  // The nodes themselves took the rest: translate again with that much less room for text.
  const again = translateWithin(tool, parameters, Math.max(0, first.spent - (bytes - MAX_DECLARATION_BYTES)));
  if (!again.ok || again.parameters === undefined || jsonBytes(again.parameters) <= MAX_DECLARATION_BYTES) return again.result;
  return { ok: false, reason: `its parameters take more than the ${MAX_DECLARATION_BYTES / 1024} KiB a declaration may once translated` };
}

type Attempt = { result: GeminiParameters; spent: number } & ({ ok: true; parameters: GeminiSchema | undefined } | { ok: false; parameters?: undefined });

function translateWithin(tool: string, parameters: unknown, budget: number): Attempt {
  const walk: Walk = {
    tool,
    root: parameters,
    // The document itself is being expanded: a `$ref: "#"` inside it is a cycle.
    refs: ['#'],
    nodes: 0,
    budget,
    spent: 0,
    losses: [],
    lossCount: 0,
    enums: new WeakMap(),
    child: (schema, pointer, depth) => translateNode(walk, schema, pointer, depth),
  };
  const done = (result: GeminiParameters): Attempt =>
    result.ok ? { result, spent: walk.spent, ok: true, parameters: result.parameters } : { result, spent: walk.spent, ok: false };
  try {
    const out = translateNode(walk, parameters, '', 0);
    const unreported = walk.lossCount - walk.losses.length;
    if (undeclarable(out)) {
      return done(out.none === NO_PARAMETERS ? { ok: true, parameters: undefined, losses: walk.losses, unreported } : { ok: false, reason: `its parameters ${out.none}` });
    }
    if (out.type !== 'OBJECT') return done({ ok: false, reason: 'its parameters are not one object' });
    const { nullable: _, ...root } = out;
    return done({ ok: true, parameters: root, losses: walk.losses, unreported });
  } catch (error) {
    if (error instanceof Refusal) return done({ ok: false, reason: error.message });
    throw error;
  }
}

/** A tool as a realtime session carries it: its parameters any JSON Schema. */
export type ToolToDeclare = Pick<PersonaTool, 'type' | 'name' | 'description'> & { parameters: unknown };

export interface GeminiTools {
  functionDeclarations: GeminiFunctionDeclaration[];
  /** One per loss (`gemini-schema: <tool> #/pointer: <what>`) and per tool left out. */
  warnings: string[];
}

/**
 * The session's tools as Gemini's `functionDeclarations`, in order. A tool whose
 * parameters cannot be declared is left out with a warning; the name and description are
 * the tool's own. Pure.
 */
export function toGeminiFunctionDeclarations(tools: readonly ToolToDeclare[]): GeminiTools {
  const functionDeclarations: GeminiFunctionDeclaration[] = [];
  const warnings: string[] = [];
  for (const tool of tools) {
    if (!GEMINI_FUNCTION_NAME.test(tool.name)) {
      warnings.push(`gemini-schema: ${shown(tool.name)} is left out: not a function name Gemini takes`);
      continue;
    }
    const translated = toGeminiParameters(tool.name, tool.parameters);
    if (!translated.ok) {
      warnings.push(`gemini-schema: ${tool.name} is left out: ${translated.reason}`);
      continue;
    }
    for (const loss of translated.losses) warnings.push(lossWarning(loss));
    if (translated.unreported > 0) warnings.push(`gemini-schema: ${tool.name}: ${translated.unreported} more losses`);
    const declaration: GeminiFunctionDeclaration = { name: tool.name, description: tool.description };
    if (translated.parameters !== undefined) declaration.parameters = translated.parameters;
    functionDeclarations.push(declaration);
  }
  return { functionDeclarations, warnings };
}

/** A loss as one warning line. */
export function lossWarning(loss: SchemaLoss): string {
  return `gemini-schema: ${loss.tool} ${loss.pointer}: ${loss.lost}`;
}

function translateNode(walk: Walk, schema: unknown, pointer: string, depth: number): Translated {
  if (depth > MAX_SCHEMA_DEPTH) refuse(`they nest deeper than ${MAX_SCHEMA_DEPTH} levels at #${pointer}`);
  const mark = walk.refs.length;
  try {
    const expanded = expand(walk, schema, pointer);
    if (expanded === false) return { none: 'allows no value' };
    return translateSchema(walk, expanded === true ? {} : expanded, pointer, depth);
  } finally {
    walk.refs.length = mark;
  }
}

/** The schema with its `$ref`s and `allOf`s merged in, until it has neither at the top. */
function expand(walk: Walk, schema: unknown, pointer: string): Record<string, unknown> | boolean {
  let current = schema;
  for (;;) {
    walk.nodes += 1;
    if (walk.nodes > MAX_SCHEMA_NODES) refuse(`they expand to more than ${MAX_SCHEMA_NODES} schema nodes`);
    if (typeof current === 'boolean') return current;
    if (!isPlainObject(current)) refuse(`#${pointer} is not a schema`);
    if (current.$dynamicRef !== undefined || current.$recursiveRef !== undefined) refuse(`#${pointer} uses a dynamic reference`);
    if (current.$ref !== undefined) {
      const ref = current.$ref;
      if (typeof ref !== 'string') refuse(`$ref at #${pointer} is not a string`);
      if (walk.refs.includes(ref)) refuse(`$ref ${shown(ref)} at #${pointer} refers to itself; Gemini's schema has no recursion`);
      const target = resolveLocalRef(walk.root, ref);
      if (target === undefined) refuse(`$ref ${shown(ref)} at #${pointer} names no schema in the tool's parameters`);
      walk.refs.push(ref);
      const { $ref: _, ...siblings } = current;
      current = combine(walk, siblings, expand(walk, target, pointer), pointer);
    } else if (current.allOf !== undefined) {
      const { allOf, ...rest } = current;
      if (!Array.isArray(allOf)) refuse(`allOf at #${pointer} is not a list`);
      let merged: Record<string, unknown> | boolean = rest;
      for (const branch of allOf) merged = combine(walk, merged, expand(walk, branch, pointer), pointer);
      current = merged;
    } else {
      return current;
    }
  }
}

function combine(walk: Walk, a: Record<string, unknown> | boolean, b: Record<string, unknown> | boolean, pointer: string): Record<string, unknown> | boolean {
  if (a === false || b === false) return false;
  if (a === true) return b;
  if (b === true) return a;
  const merged = mergeSchemas(a, b);
  for (const keyword of merged.conflicts) {
    lose(walk, pointer, keyword, `two ${keyword} rules that one schema cannot hold (allOf or $ref); the second was dropped`);
  }
  return merged.schema;
}

function translateSchema(walk: Walk, schema: Record<string, unknown>, pointer: string, depth: number): Translated {
  const notes: string[] = [];
  if (schema.not !== undefined) {
    notes.push(`Must not match ${shown(schema.not, 120)}.`);
    lose(walk, pointer, 'not', "not is not in Gemini's schema; said in the description");
  }
  if (schema.if !== undefined && (schema.then !== undefined || schema.else !== undefined)) {
    const then = schema.then === undefined ? '' : ` it must match ${shown(schema.then, 80)}`;
    const otherwise = schema.else === undefined ? '' : `${then ? ';' : ''} otherwise it must match ${shown(schema.else, 80)}`;
    notes.push(`If it matches ${shown(schema.if, 80)},${then}${otherwise}.`);
    lose(walk, pointer, 'if', "if/then/else is not in Gemini's schema; said in the description");
  }
  if (schema.anyOf !== undefined || schema.oneOf !== undefined) return alternatives(walk, schema, pointer, depth, notes);
  return typesOf(walk, schema, pointer, depth, notes);
}

/** Keywords said at this node already, or annotations: not distributed into each alternative. */
const NOT_DISTRIBUTED: ReadonlySet<string> = new Set(['anyOf', 'oneOf', 'not', 'if', 'then', 'else', 'description', 'title', 'examples', 'default', '$comment', '$schema', '$id', '$defs', 'definitions']);

function alternatives(walk: Walk, schema: Record<string, unknown>, pointer: string, depth: number, notes: string[]): Translated {
  const keyword = schema.anyOf !== undefined ? 'anyOf' : 'oneOf';
  const list = schema[keyword];
  if (keyword === 'anyOf' && schema.oneOf !== undefined) {
    notes.push(`Must also match exactly one of ${shown(schema.oneOf, 120)}.`);
    lose(walk, pointer, 'oneOf', "a oneOf beside an anyOf is not in Gemini's schema; said in the description");
  }
  if (!Array.isArray(list) || list.length === 0) refuse(`${keyword} at #${pointer} is not a list of schemas`);
  const rest = Object.fromEntries(Object.entries(schema).filter(([key]) => !NOT_DISTRIBUTED.has(key)));
  const parts: Typed[] = [];
  const reasons: string[] = [];
  let nullable = false;
  list.forEach((branch, index) => {
    const out = translateNode(walk, Object.keys(rest).length === 0 ? branch : { allOf: [rest, branch] }, `${pointer}/${keyword}/${index}`, depth);
    if (undeclarable(out)) {
      if (out.none === ONLY_NULL) nullable = true;
      else reasons.push(out.none);
      return;
    }
    if (out.nullable === true) nullable = true;
    // Gemini's anyOf branches each have a type: a nested anyOf is spliced in, its words kept.
    const nested = out.type === undefined && out.anyOf !== undefined;
    if (nested && out.description !== undefined) notes.push(out.description);
    for (const part of nested ? out.anyOf! : [out]) parts.push({ schema: part, notes: [] });
  });
  if (keyword === 'oneOf' && !disjoint(list)) {
    notes.push('Exactly one of the alternatives may match.');
    lose(walk, pointer, 'oneOf', "oneOf read as anyOf: Gemini's anyOf lets more than one alternative match; said in the description");
  }
  return assemble(walk, pointer, schema.description, notes, parts, nullable, reasons);
}

/**
 * True when no value can match two of the alternatives, judged on the input: each names its
 * types (by `type`, `enum` or `const`, with no `$ref` or `allOf` to look through) and no two
 * share one (an integer is a number). Then `oneOf` and `anyOf` accept the same values.
 */
function disjoint(alternatives: readonly unknown[]): boolean {
  const seen = new Set<string>();
  for (const alternative of alternatives) {
    if (!isPlainObject(alternative) || alternative.$ref !== undefined || alternative.allOf !== undefined) return false;
    const values = Object.hasOwn(alternative, 'const') ? [alternative.const] : Array.isArray(alternative.enum) ? alternative.enum : undefined;
    const named = alternative.type ?? values?.map(jsonTypeOf);
    const types = new Set(typeof named === 'string' ? [named] : Array.isArray(named) ? named.map(String) : []);
    if (types.size === 0) return false;
    if (types.has('integer') || types.has('number')) types.add('number').add('integer');
    for (const type of types) {
      if (seen.has(type)) return false;
      seen.add(type);
    }
  }
  return true;
}

function typesOf(walk: Walk, schema: Record<string, unknown>, pointer: string, depth: number, notes: string[]): Translated {
  const allowed = allowedValues(schema, pointer);
  const { types, nullable } = typeSet(walk, schema, pointer, allowed);
  const parts: Typed[] = [];
  const reasons: string[] = [];
  for (const type of types) {
    const out = typed(walk, schema, type, pointer, depth, allowed);
    if (undeclarable(out)) reasons.push(out.none);
    else parts.push(out);
  }
  return assemble(walk, pointer, schema.description, notes, parts, nullable, reasons);
}

/**
 * One node from its typed parts: the part itself when there is one, else their `anyOf`. A
 * description written here takes its bytes from the walk's budget; a part's own (a branch
 * translated already) took them when it was written.
 */
function assemble(walk: Walk, pointer: string, own: unknown, notes: string[], parts: readonly Typed[], nullable: boolean, reasons: readonly string[]): Translated {
  if (parts.length === 0) return nullable ? { none: ONLY_NULL } : { none: reasons[0] ?? 'allows no value' };
  const description = typeof own === 'string' ? own : undefined;
  if (parts.length === 1) {
    const [{ schema, notes: partNotes }] = parts as [Typed];
    const base = [description, schema.description].filter((text) => text !== undefined && text.trim() !== '').join(' ');
    const said = base === schema.description && notes.length + partNotes.length === 0 ? base : fitDescription(walk, pointer, describe(base, [...notes, ...partNotes]));
    return finish({ ...schema, description: said || undefined, nullable: nullable || schema.nullable ? true : undefined });
  }
  const anyOf = parts.map((part) => finish({ ...part.schema, description: part.notes.length === 0 ? part.schema.description : fitDescription(walk, pointer, describe(part.schema.description, part.notes)) }));
  return finish({ description: fitDescription(walk, pointer, describe(description, notes)), nullable: nullable ? true : undefined, anyOf });
}

/** The output's keys, in the order every node is written (so equal schemas are equal bytes). */
const ORDER = ['type', 'format', 'description', 'nullable', 'enum', 'properties', 'required', 'minProperties', 'maxProperties', 'items', 'minItems', 'maxItems', 'minLength', 'maxLength', 'pattern', 'minimum', 'maximum', 'anyOf', 'default'] as const;

function finish(node: GeminiSchema): GeminiSchema {
  const out: Record<string, unknown> = {};
  for (const key of ORDER) if (node[key] !== undefined) out[key] = node[key];
  return out as GeminiSchema;
}

function allowedValues(schema: Record<string, unknown>, pointer: string): Allowed | undefined {
  if (schema.enum !== undefined && !Array.isArray(schema.enum)) refuse(`enum at #${pointer} is not a list`);
  const listed = schema.enum as unknown[] | undefined;
  if (Object.hasOwn(schema, 'const')) {
    const value = schema.const;
    const key = canonicalJson(value);
    const values = listed === undefined || listed.some((entry) => canonicalJson(entry) === key) ? [value] : [];
    return { values, keyword: 'const' };
  }
  return listed === undefined ? undefined : { values: listed, keyword: 'enum' };
}

const INFERRED: ReadonlyArray<[JsonType, readonly string[]]> = [
  ['string', ['minLength', 'maxLength', 'pattern', 'format']],
  ['number', ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']],
  ['array', ['items', 'prefixItems', 'minItems', 'maxItems', 'uniqueItems', 'contains', 'additionalItems']],
  ['object', ['properties', 'required', 'additionalProperties', 'patternProperties', 'minProperties', 'maxProperties', 'propertyNames', 'dependentRequired', 'dependentSchemas']],
];

/**
 * The types a node declares: its `type`, else those of its enum or const values, else those
 * its keywords apply to (a subset of what it accepts, so nothing widens). A node that says
 * nothing about its type accepts any value; Gemini has no such type, so it is declared as a
 * string (or null), and that is a loss.
 */
function typeSet(walk: Walk, schema: Record<string, unknown>, pointer: string, allowed: Allowed | undefined): { types: JsonType[]; nullable: boolean } {
  let names: string[];
  if (schema.type !== undefined) {
    const given = typeof schema.type === 'string' ? [schema.type] : schema.type;
    if (!Array.isArray(given) || !given.every((name) => typeof name === 'string' && JSON_TYPES.has(name))) refuse(`type at #${pointer} is not a JSON Schema type`);
    names = given as string[];
  } else if (allowed !== undefined) {
    names = [...enumFacts(walk, allowed.values).types];
  } else {
    names = INFERRED.filter(([, keywords]) => keywords.some((keyword) => schema[keyword] !== undefined)).map(([type]) => type);
    if (names.length === 0) {
      lose(walk, pointer, 'type', 'takes any JSON value; Gemini has no such type, so it is declared as a string');
      names = ['string', 'null'];
    }
  }
  const facts = allowed === undefined ? undefined : enumFacts(walk, allowed.values);
  const nullable = names.includes('null') && (facts === undefined || facts.types.has('null'));
  let types = [...new Set(names.filter((name): name is JsonType => name !== 'null'))];
  if (types.includes('number')) types = types.filter((type) => type !== 'integer');
  // A whole number is an integer and a number too.
  if (facts !== undefined) types = types.filter((type) => facts.types.has(type) || (type === 'number' && facts.types.has('integer')));
  return { types, nullable };
}
