/**
 * Two JSON Schema operations a translator to a schema subset without `$ref` or `allOf`
 * needs: resolving a local `$ref`, and merging two schemas an instance must both match
 * into one. Pure; neither mutates its inputs.
 *
 * @see https://json-schema.org/draft/2020-12/json-schema-core#name-direct-references-with-ref
 * @see https://www.rfc-editor.org/rfc/rfc6901
 */

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const ARRAY_INDEX = /^(?:0|[1-9][0-9]{0,8})$/;

/**
 * The schema a local `$ref` names: `#` (the document) or a JSON Pointer fragment
 * (`#/$defs/slug`, percent-decoded, `~0`/`~1` unescaped). Undefined for anything else —
 * another document, an anchor, a pointer to nothing. Linear in the pointer's length.
 */
export function resolveLocalRef(root: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined;
  let fragment: string;
  try {
    fragment = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (fragment === '') return root;
  if (!fragment.startsWith('/')) return undefined;
  let node: unknown = root;
  for (const raw of fragment.slice(1).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(node)) {
      if (!ARRAY_INDEX.test(key)) return undefined;
      node = node[Number(key)];
    } else if (isPlainObject(node) && Object.hasOwn(node, key)) {
      node = node[key];
    } else {
      return undefined;
    }
    if (node === undefined) return undefined;
  }
  return node;
}

export interface Merged {
  /** What an instance must match to match both (`false`: nothing can). */
  schema: Record<string, unknown> | boolean;
  /** Keywords both schemas constrain differently, where the second one's constraint was dropped. */
  conflicts: string[];
}

/** Annotations: the first schema's are kept, the second's dropped without loss of meaning. */
const ANNOTATIONS: ReadonlySet<string> = new Set(['title', 'description', 'default', 'examples', 'example', '$comment', 'deprecated', 'readOnly', 'writeOnly', '$schema', '$id', '$anchor', '$defs', 'definitions']);
const LOWER_BOUNDS: ReadonlySet<string> = new Set(['minimum', 'exclusiveMinimum', 'minLength', 'minItems', 'minProperties', 'minContains']);
const UPPER_BOUNDS: ReadonlySet<string> = new Set(['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems', 'maxProperties', 'maxContains']);
const BOTH_SCHEMAS: ReadonlySet<string> = new Set(['items', 'additionalProperties', 'propertyNames', 'contains']);

/**
 * A JSON value as text with every object's keys sorted: two values JSON Schema calls equal
 * (`enum`, `const`) have the same text whatever their key order, so values are compared
 * through a Set of these, in linear time. Linear in the value's size, plus sorting each
 * object's keys.
 */
export function canonicalJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value) ?? 'null';
  return JSON.stringify(value, (_key, entry: unknown) => (isPlainObject(entry) ? Object.fromEntries(Object.entries(entry).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : entry)) ?? 'null';
}

const same = (a: unknown, b: unknown): boolean => a === b || canonicalJson(a) === canonicalJson(b);

function typeList(value: unknown): string[] | undefined {
  if (typeof value === 'string') return [value];
  return Array.isArray(value) && value.every((entry) => typeof entry === 'string') ? value : undefined;
}

/** The types both allow (an integer is a number). Undefined when either is malformed. */
function typeIntersection(a: unknown, b: unknown): string[] | undefined {
  const left = typeList(a);
  const right = typeList(b);
  if (left === undefined || right === undefined) return undefined;
  const out: string[] = [];
  for (const type of left) {
    if (right.includes(type)) out.push(type);
    else if (type === 'integer' && right.includes('number')) out.push('integer');
    else if (type === 'number' && right.includes('integer')) out.push('integer');
  }
  return [...new Set(out)];
}

/**
 * One schema an instance matches exactly when it matches both `a` and `b` (their `allOf`),
 * where the two can be combined keyword by keyword: types and enums intersect, bounds take
 * the tighter, `required` unites, properties and item schemas present in both become an
 * `allOf` of the two (merged when translated in turn). A keyword both constrain in a way
 * one keyword cannot say (two patterns, two formats, two `anyOf`s) keeps `a`'s and is named
 * in `conflicts`. Deterministic; `a`'s keys first.
 */
export function mergeSchemas(a: Record<string, unknown>, b: Record<string, unknown>): Merged {
  const out: Record<string, unknown> = { ...a };
  const conflicts: string[] = [];
  for (const [key, value] of Object.entries(b)) {
    if (!Object.hasOwn(out, key)) {
      Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
      continue;
    }
    const mine = out[key];
    if (key === 'enum' && Array.isArray(mine) && Array.isArray(value)) {
      const theirs = new Set(value.map(canonicalJson));
      const both = mine.filter((entry) => theirs.has(canonicalJson(entry)));
      if (both.length === 0) return { schema: false, conflicts };
      out.enum = both;
      continue;
    }
    if (same(mine, value) || ANNOTATIONS.has(key)) continue;
    if (key === 'type') {
      const types = typeIntersection(mine, value);
      if (types === undefined) conflicts.push(key);
      else if (types.length === 0) return { schema: false, conflicts };
      else out.type = types;
    } else if (key === 'const') {
      return { schema: false, conflicts };
    } else if (key === 'required' && Array.isArray(mine) && Array.isArray(value)) {
      out.required = [...new Set([...mine, ...value])];
    } else if (LOWER_BOUNDS.has(key) && typeof mine === 'number' && typeof value === 'number') {
      out[key] = Math.max(mine, value);
    } else if (UPPER_BOUNDS.has(key) && typeof mine === 'number' && typeof value === 'number') {
      out[key] = Math.min(mine, value);
    } else if (key === 'uniqueItems' && typeof mine === 'boolean' && typeof value === 'boolean') {
      out[key] = mine || value;
    } else if (key === 'properties' && isPlainObject(mine) && isPlainObject(value)) {
      continue;
    } else if (BOTH_SCHEMAS.has(key)) {
      out[key] = mine === false || value === false ? false : { allOf: [mine, value] };
    } else {
      conflicts.push(key);
    }
  }
  if (isPlainObject(a.properties) || isPlainObject(b.properties)) out.properties = mergeProperties(a, b);
  return { schema: out, conflicts };
}

/**
 * The properties of both: one both declare must match both schemas, and one only one side
 * declares must match the other side's `additionalProperties` too (which may be `false`).
 */
function mergeProperties(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const left = isPlainObject(a.properties) ? a.properties : {};
  const right = isPlainObject(b.properties) ? b.properties : {};
  const out: Record<string, unknown> = {};
  const put = (name: string, value: unknown) => Object.defineProperty(out, name, { value, enumerable: true, writable: true, configurable: true });
  for (const [name, schema] of Object.entries(left)) {
    if (Object.hasOwn(right, name)) put(name, same(schema, right[name]) ? schema : { allOf: [schema, right[name]] });
    else put(name, constrained(schema, b.additionalProperties));
  }
  for (const [name, schema] of Object.entries(right)) if (!Object.hasOwn(left, name)) put(name, constrained(schema, a.additionalProperties));
  return out;
}

function constrained(schema: unknown, additional: unknown): unknown {
  if (additional === undefined || additional === true || (isPlainObject(additional) && Object.keys(additional).length === 0)) return schema;
  return { allOf: [schema, additional] };
}
