import { toSingleLine } from '../text.js';
import { canonicalJson } from './json-schema-merge.js';
import {
  bound,
  count,
  isPlainObject,
  jsonBytes,
  lose,
  MAX_DECLARATION_BYTES,
  MEMBER_BYTES,
  refuse,
  shown,
  shownList,
  spend,
  token,
  undeclarable,
  type EnumFacts,
  type GeminiSchema,
  type Undeclarable,
  type Walk,
} from './gemini-schema-walk.js';

/**
 * One JSON Schema type of a node, as a Gemini schema node: only the keywords that apply to
 * that type are read (as JSON Schema applies them), kept where Gemini's schema has them,
 * turned exact where it can (an integer's exclusive bound, `const` as a one-value enum) and
 * otherwise said in `notes` and recorded as a loss. Internal to gemini-schema.ts.
 */

export type JsonType = 'string' | 'integer' | 'number' | 'boolean' | 'array' | 'object';

export interface Typed {
  schema: GeminiSchema;
  /** What Gemini's schema could not say, in words, for the node's description. */
  notes: string[];
}

/** The values an `enum` or `const` allows, and which of the two said so. */
export interface Allowed {
  values: unknown[];
  keyword: 'enum' | 'const';
}

/** An object no parameter of which Gemini can declare: at the top, a function without parameters. */
export const NO_PARAMETERS = 'is an object with no parameter Gemini can declare';

/** A parameter name Gemini accepts (FunctionDeclaration.parameters in the Gemini API). */
const PARAMETER_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

export function typed(walk: Walk, schema: Record<string, unknown>, type: JsonType, pointer: string, depth: number, allowed: Allowed | undefined): Typed | Undeclarable {
  switch (type) {
    case 'string':
      return stringNode(walk, schema, pointer, allowed);
    case 'integer':
    case 'number':
      return numberNode(walk, schema, type, pointer, allowed);
    case 'boolean':
      return booleanNode(walk, schema, pointer, allowed);
    case 'array':
      return arrayNode(walk, schema, pointer, depth, allowed);
    case 'object':
      return objectNode(walk, schema, pointer, depth, allowed);
  }
}

export function valueIs(type: JsonType, value: unknown): boolean {
  switch (type) {
    case 'string':
      return typeof value === 'string';
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number';
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isPlainObject(value);
  }
}

export function jsonTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** What the enum `values` holds, read once per walk whatever refers to it. Linear in the values. */
export function enumFacts(walk: Walk, values: readonly unknown[]): EnumFacts {
  let facts = walk.enums.get(values);
  if (facts === undefined) {
    const types = new Set<string>();
    for (const value of values) types.add(jsonTypeOf(value));
    facts = { types, ofType: new Map() };
    walk.enums.set(values, facts);
  }
  return facts;
}

/** The distinct values of `type` an enum or const allows (equal as JSON values whatever their key order), in order. Linear, once per enum and type. */
function valuesOf(walk: Walk, allowed: Allowed, type: JsonType): unknown[] {
  const facts = enumFacts(walk, allowed.values);
  let values = facts.ofType.get(type);
  if (values === undefined) {
    const seen = new Set<string>();
    values = allowed.values.filter((value) => {
      if (!valueIs(type, value)) return false;
      const key = typeof value === 'string' ? value : canonicalJson(value);
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    facts.ofType.set(type, values);
  }
  return values;
}

/** The allowed values of one type, said in words when Gemini's enum (strings only) cannot hold them. */
function sayValues(walk: Walk, type: JsonType, pointer: string, allowed: Allowed, notes: string[]): Undeclarable | undefined {
  const values = valuesOf(walk, allowed, type);
  if (values.length === 0) return { none: `allows no ${type} value` };
  if (type === 'boolean' && values.length === 2) return undefined;
  notes.push(values.length === 1 ? `Must be ${shown(values[0])}.` : `One of ${shownList(values)}.`);
  lose(walk, pointer, allowed.keyword, `${allowed.keyword} ${shownList(values)}: Gemini's enums are strings; said in the description`);
  return undefined;
}

function stringNode(walk: Walk, schema: Record<string, unknown>, pointer: string, allowed: Allowed | undefined): Typed | Undeclarable {
  const notes: string[] = [];
  const node: GeminiSchema = { type: 'STRING' };
  if (allowed !== undefined) {
    const values = valuesOf(walk, allowed, 'string') as string[];
    if (values.length === 0) return { none: 'allows no string value' };
    if (spend(walk, enumBytes(walk, values))) {
      node.format = 'enum';
      node.enum = values;
    } else {
      notes.push(`One of ${shownList(values)}.`);
      lose(walk, pointer, allowed.keyword, `${values.length} values take more than is left of the ${KIB} a tool's declaration may take; declared as any string, the first said in the description`);
    }
  }
  const format = schema.format;
  if (typeof format === 'string' && !(format === 'date-time' && node.enum === undefined)) {
    notes.push(`Format: ${toSingleLine(format, 40)}.`);
    lose(walk, pointer, 'format', `format ${shown(format)}: Gemini takes only date-time (and enum) for strings; said in the description`);
  } else if (format === 'date-time') {
    node.format = 'date-time';
  }
  const pattern = schema.pattern;
  if (typeof pattern === 'string') {
    if (portablePattern(pattern)) {
      if (spend(walk, jsonBytes(pattern) + MEMBER_BYTES)) node.pattern = pattern;
      else lose(walk, pointer, 'pattern', `pattern ${shown(pattern)} takes more than is left of the ${KIB} a tool's declaration may take; dropped`);
    } else {
      notes.push(`Must match the regular expression ${shown(pattern, 120)}.`);
      lose(walk, pointer, 'pattern', `pattern ${shown(pattern)} uses syntax RE2 and ECMAScript read differently; said in the description`);
    }
  }
  node.minLength = count(schema, 'minLength');
  node.maxLength = count(schema, 'maxLength');
  if (typeof schema.default === 'string') {
    if (spend(walk, jsonBytes(schema.default) + MEMBER_BYTES)) node.default = schema.default;
    else lose(walk, pointer, 'default', `default ${shown(schema.default)} takes more than is left of the ${KIB} a tool's declaration may take; dropped`);
  }
  return { schema: node, notes };
}

const KIB = `${MAX_DECLARATION_BYTES / 1024} KiB`;

/** The bytes an enum of `values` takes as JSON, or more than the walk has left: it stops counting there. */
function enumBytes(walk: Walk, values: readonly string[]): number {
  const room = walk.budget - walk.spent;
  let bytes = 2 * MEMBER_BYTES;
  for (let i = 0; i < values.length && bytes <= room; i++) bytes += jsonBytes(values[i]) + 1;
  return bytes;
}

function numberNode(walk: Walk, schema: Record<string, unknown>, type: 'integer' | 'number', pointer: string, allowed: Allowed | undefined): Typed | Undeclarable {
  const notes: string[] = [];
  const node: GeminiSchema = { type: type === 'integer' ? 'INTEGER' : 'NUMBER' };
  if (allowed !== undefined) {
    const none = sayValues(walk, type, pointer, allowed, notes);
    if (none !== undefined) return none;
  }
  const format = schema.format;
  if (typeof format === 'string') {
    if ((type === 'integer' ? ['int32', 'int64'] : ['float', 'double']).includes(format)) node.format = format;
    else {
      notes.push(`Format: ${toSingleLine(format, 40)}.`);
      lose(walk, pointer, 'format', `format ${shown(format)}: Gemini takes int32/int64 or float/double here; said in the description`);
    }
  }
  const multipleOf = bound(schema, 'multipleOf');
  if (multipleOf !== undefined) {
    if (multipleOf <= 0) refuse('multipleOf is not positive');
    if (multipleOf === 1) node.type = 'INTEGER';
    else {
      notes.push(`A multiple of ${multipleOf}.`);
      lose(walk, pointer, 'multipleOf', `multipleOf ${multipleOf} is not in Gemini's schema; said in the description`);
    }
  }
  const lower = limits(walk, schema, node.type === 'INTEGER', pointer, 'min', notes);
  const upper = limits(walk, schema, node.type === 'INTEGER', pointer, 'max', notes);
  node.minimum = lower;
  node.maximum = upper;
  const fallback = schema.default;
  if (typeof fallback === 'number' && (node.type === 'NUMBER' || Number.isInteger(fallback))) node.default = fallback;
  return { schema: node, notes };
}

/**
 * The inclusive bound Gemini takes for `minimum` and `exclusiveMinimum` (or the maximums),
 * draft-04's boolean form included. An integer's exclusive bound becomes the next integer
 * in, exactly; a number's is kept inclusive and said in words.
 */
function limits(walk: Walk, schema: Record<string, unknown>, integer: boolean, pointer: string, side: 'min' | 'max', notes: string[]): number | undefined {
  const inclusiveKey = side === 'min' ? 'minimum' : 'maximum';
  const exclusiveKey = side === 'min' ? 'exclusiveMinimum' : 'exclusiveMaximum';
  let inclusive = bound(schema, inclusiveKey);
  let exclusive = bound(schema, exclusiveKey);
  if (schema[exclusiveKey] === true) {
    exclusive = inclusive;
    inclusive = undefined;
  }
  if (exclusive === undefined) return inclusive;
  const tighter = side === 'min' ? (a: number, b: number) => Math.max(a, b) : (a: number, b: number) => Math.min(a, b);
  if (inclusive !== undefined && tighter(inclusive, exclusive) === inclusive && inclusive !== exclusive) return inclusive;
  if (integer) {
    const next = side === 'min' ? Math.floor(exclusive) + 1 : Math.ceil(exclusive) - 1;
    if (side === 'min' ? next > exclusive : next < exclusive) return inclusive === undefined ? next : tighter(inclusive, next);
  }
  notes.push(`${side === 'min' ? 'Greater' : 'Less'} than ${exclusive}.`);
  lose(walk, pointer, exclusiveKey, `${exclusiveKey} ${exclusive}: Gemini's bounds are inclusive; said in the description`);
  return exclusive;
}

function booleanNode(walk: Walk, schema: Record<string, unknown>, pointer: string, allowed: Allowed | undefined): Typed | Undeclarable {
  const notes: string[] = [];
  if (allowed !== undefined) {
    const none = sayValues(walk, 'boolean', pointer, allowed, notes);
    if (none !== undefined) return none;
  }
  const node: GeminiSchema = { type: 'BOOLEAN' };
  if (typeof schema.default === 'boolean') node.default = schema.default;
  return { schema: node, notes };
}

const smaller = (a: string | undefined, b: number): string => String(a === undefined ? b : Math.min(Number(a), b));

function arrayNode(walk: Walk, schema: Record<string, unknown>, pointer: string, depth: number, allowed: Allowed | undefined): Typed | Undeclarable {
  const notes: string[] = [];
  if (allowed !== undefined) {
    const none = sayValues(walk, 'array', pointer, allowed, notes);
    if (none !== undefined) return none;
  }
  let items: unknown = schema.items;
  let prefix: unknown = schema.prefixItems;
  if (Array.isArray(items)) [prefix, items] = [items, schema.additionalItems];
  if (prefix !== undefined && !Array.isArray(prefix)) refuse(`prefixItems at #${pointer} is not an array`);
  if (items === undefined && schema.unevaluatedItems === false) items = false;
  else if (schema.unevaluatedItems !== undefined && schema.unevaluatedItems !== true && schema.unevaluatedItems !== false) {
    lose(walk, pointer, 'unevaluatedItems', "unevaluatedItems is not in Gemini's schema; dropped");
  }
  let maxItems = count(schema, 'maxItems');
  let itemSchema: unknown = items ?? true;
  let itemPointer = `${pointer}/items`;
  if (Array.isArray(prefix) && prefix.length > 0) {
    notes.push(`Items by position: ${shown(prefix, 120)}.`);
    lose(walk, pointer, 'prefixItems', 'each position has its own item schema; Gemini takes one for all items; said in the description');
    if (items === false) maxItems = smaller(maxItems, prefix.length);
    itemSchema = items === undefined || items === true || items === false ? { anyOf: prefix } : { anyOf: [...prefix, items] };
    itemPointer = `${pointer}/prefixItems`;
  }
  const node: GeminiSchema = { type: 'ARRAY' };
  const translated = itemSchema === false ? { none: 'allows no item' } : walk.child(itemSchema, itemPointer, depth + 1);
  if (undeclarable(translated)) {
    if (itemSchema !== false) lose(walk, itemPointer, 'items', `an item ${translated.none}; only an empty array is declared`);
    node.items = { type: 'STRING' };
    maxItems = '0';
  } else {
    node.items = translated;
  }
  if (schema.uniqueItems === true) {
    notes.push('No two items may be equal.');
    lose(walk, pointer, 'uniqueItems', "uniqueItems is not in Gemini's schema; said in the description");
  }
  if (schema.contains !== undefined) {
    const least = count(schema, 'minContains') ?? '1';
    const most = count(schema, 'maxContains');
    notes.push(`At least ${least}${most === undefined ? '' : ` and at most ${most}`} of the items must match ${shown(schema.contains, 120)}.`);
    lose(walk, pointer, 'contains', "contains is not in Gemini's schema; said in the description");
  }
  node.minItems = count(schema, 'minItems');
  node.maxItems = maxItems;
  return { schema: node, notes };
}

function objectNode(walk: Walk, schema: Record<string, unknown>, pointer: string, depth: number, allowed: Allowed | undefined): Typed | Undeclarable {
  const notes: string[] = [];
  if (allowed !== undefined) {
    const none = sayValues(walk, 'object', pointer, allowed, notes);
    if (none !== undefined) return none;
  }
  const declared = schema.properties ?? {};
  const required = schema.required ?? [];
  if (!isPlainObject(declared)) refuse(`properties at #${pointer} is not an object`);
  if (!Array.isArray(required) || !required.every((name) => typeof name === 'string')) refuse(`required at #${pointer} is not a list of names`);
  const kept: Array<[string, GeminiSchema]> = [];
  for (const [name, child] of Object.entries(declared)) {
    const keyword = required.includes(name) ? 'required' : 'properties';
    if (!PARAMETER_NAME.test(name)) {
      lose(walk, pointer, keyword, `parameter ${shown(name)} is not a name Gemini takes (a letter or _, then letters, digits or _, at most 64); left out`);
      continue;
    }
    const translated = walk.child(child, `${pointer}/properties/${token(name)}`, depth + 1);
    if (undeclarable(translated)) lose(walk, pointer, keyword, `parameter ${shown(name)} ${translated.none}; left out`);
    else kept.push([name, translated]);
  }
  for (const name of required) {
    if (!Object.hasOwn(declared, name)) lose(walk, pointer, 'required', `required ${shown(name)} is not a declared parameter; Gemini requires only declared ones`);
  }
  sayObjectRules(walk, schema, pointer, notes);
  if (kept.length === 0) return { none: NO_PARAMETERS };
  const names = new Set(kept.map(([name]) => name));
  const requiredKept = [...new Set(required.filter((name) => names.has(name)))];
  const node: GeminiSchema = { type: 'OBJECT', properties: Object.fromEntries(kept) };
  if (requiredKept.length > 0) node.required = requiredKept;
  node.minProperties = count(schema, 'minProperties');
  node.maxProperties = count(schema, 'maxProperties');
  return { schema: node, notes };
}

const trivial = (value: unknown): boolean => value === undefined || value === true || (isPlainObject(value) && Object.keys(value).length === 0);

/** The object rules Gemini's schema has no keyword for, said in words. `additionalProperties: false` is not one: Gemini's arguments carry the declared parameters. */
function sayObjectRules(walk: Walk, schema: Record<string, unknown>, pointer: string, notes: string[]): void {
  for (const [pattern, rule] of Object.entries(isPlainObject(schema.patternProperties) ? schema.patternProperties : {})) {
    notes.push(`Properties whose names match ${shown(pattern)} must match ${shown(rule, 120)}.`);
    lose(walk, pointer, 'patternProperties', "patternProperties is not in Gemini's schema; said in the description");
  }
  if (!trivial(schema.additionalProperties) && schema.additionalProperties !== false) {
    notes.push(`Other properties are allowed when they match ${shown(schema.additionalProperties, 120)}.`);
    lose(walk, pointer, 'additionalProperties', 'other properties with a schema of their own cannot be declared to Gemini; said in the description');
  }
  if (!trivial(schema.propertyNames)) {
    notes.push(`Property names must match ${shown(schema.propertyNames, 120)}.`);
    lose(walk, pointer, 'propertyNames', "propertyNames is not in Gemini's schema; said in the description");
  }
  const dependencies = { ...(isPlainObject(schema.dependencies) ? schema.dependencies : {}), ...(isPlainObject(schema.dependentRequired) ? schema.dependentRequired : {}), ...(isPlainObject(schema.dependentSchemas) ? schema.dependentSchemas : {}) };
  for (const [name, rule] of Object.entries(dependencies)) {
    if (Array.isArray(rule)) notes.push(`With ${shown(name)}, also give ${shownList(rule)}.`);
    else notes.push(`With ${shown(name)}, the whole must match ${shown(rule, 120)}.`);
    lose(walk, pointer, Array.isArray(rule) ? 'dependentRequired' : 'dependentSchemas', `what ${shown(name)} requires is not in Gemini's schema; said in the description`);
  }
  if (schema.unevaluatedProperties !== undefined && schema.unevaluatedProperties !== false && !trivial(schema.unevaluatedProperties)) {
    lose(walk, pointer, 'unevaluatedProperties', "unevaluatedProperties is not in Gemini's schema; dropped");
  }
}

/**
 * True for a pattern RE2 (Google's dialect) parses as ECMAScript (JSON Schema's) does: no
 * lookaround, backreference, named group, Unicode property or code-point escape, no `[^]`
 * or `[]`, no repeat count over 1,000. What still differs is which characters outside ASCII
 * `\s`/`\S` and `.` take (RE2's `\s` is ASCII whitespace; its `.` takes `\r`): edges a tool
 * argument does not reach for. One linear scan.
 */
export function portablePattern(pattern: string): boolean {
  if (pattern.length > 1000) return false;
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i]!;
    if (char === '\\') {
      const next = pattern[i + 1];
      if (next === undefined || !(inClass ? /[dDwWsStnrfv\\\]\[\-^.$*+?(){}|/]/ : /[dDwWsSbBtnrfv\\\]\[\-^.$*+?(){}|/]/).test(next)) return false;
      i += 1;
    } else if (inClass) {
      if (char === ']') inClass = false;
    } else if (char === '[') {
      if (pattern[i + 1] === ']' || (pattern[i + 1] === '^' && pattern[i + 2] === ']')) return false;
      inClass = true;
    } else if (char === '(' && pattern[i + 1] === '?' && pattern[i + 2] !== ':') {
      return false;
    } else if (char === '{') {
      const repeat = /^\{(\d+)(?:,(\d*))?\}/.exec(pattern.slice(i, i + 24));
      if (repeat !== null && (Number(repeat[1]) > 1000 || Number(repeat[2] ?? 0) > 1000)) return false;
    }
  }
  return !inClass;
}
