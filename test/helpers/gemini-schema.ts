/**
 * What the Gemini schema tests hold the translator to, written apart from it: the keywords
 * and values Gemini's `Schema` takes (an allow-list read from the Gemini API reference and
 * `@google/genai`'s `Schema` type, not from src/), a reading of a Gemini schema back as JSON
 * Schema for ajv, and a generator of arguments a Gemini schema allows — what a model could
 * call the function with.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';

/** Every key a Gemini `Schema` node may carry in a function declaration (https://ai.google.dev/api/caching#Schema). */
export const GEMINI_SCHEMA_KEYS = new Set([
  'type',
  'format',
  'title',
  'description',
  'nullable',
  'enum',
  'properties',
  'required',
  'minProperties',
  'maxProperties',
  'items',
  'minItems',
  'maxItems',
  'minLength',
  'maxLength',
  'pattern',
  'minimum',
  'maximum',
  'anyOf',
  'propertyOrdering',
  'default',
  'example',
]);
const TYPES = new Set(['STRING', 'NUMBER', 'INTEGER', 'BOOLEAN', 'ARRAY', 'OBJECT']);
/** The formats the Gemini API takes per type ("only 'enum' and 'date-time' are supported for STRING type"). */
const FORMATS: Record<string, readonly string[]> = { STRING: ['enum', 'date-time'], INTEGER: ['int32', 'int64'], NUMBER: ['float', 'double'] };
const ONLY_ON: Record<string, string> = {
  properties: 'OBJECT',
  required: 'OBJECT',
  minProperties: 'OBJECT',
  maxProperties: 'OBJECT',
  items: 'ARRAY',
  minItems: 'ARRAY',
  maxItems: 'ARRAY',
  minLength: 'STRING',
  maxLength: 'STRING',
  pattern: 'STRING',
  enum: 'STRING',
};
const INT64 = /^(?:0|[1-9][0-9]*)$/;
const PARAMETER_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

type Node = Record<string, unknown>;

/** Every way `node` breaks what Gemini takes, as `path: rule` lines (empty when it takes it). */
export function geminiViolations(node: unknown, path = '#'): string[] {
  const out: string[] = [];
  if (typeof node !== 'object' || node === null || Array.isArray(node)) return [`${path}: not an object`];
  const schema = node as Node;
  for (const key of Object.keys(schema)) if (!GEMINI_SCHEMA_KEYS.has(key)) out.push(`${path}: keyword ${key}`);
  const type = schema.type as string | undefined;
  if ((type === undefined) === (schema.anyOf === undefined)) out.push(`${path}: needs exactly one of type and anyOf`);
  if (type !== undefined && !TYPES.has(type)) out.push(`${path}: type ${String(type)}`);
  for (const [key, owner] of Object.entries(ONLY_ON)) if (schema[key] !== undefined && type !== owner) out.push(`${path}: ${key} on ${String(type)}`);
  if (schema.format !== undefined && !(FORMATS[type ?? '']?.includes(schema.format as string) ?? false)) out.push(`${path}: format ${String(schema.format)} on ${String(type)}`);
  if (schema.format === 'enum' && schema.enum === undefined) out.push(`${path}: format enum without enum`);
  if (schema.enum !== undefined && !(Array.isArray(schema.enum) && schema.enum.length > 0 && schema.enum.every((value) => typeof value === 'string'))) out.push(`${path}: enum not strings`);
  for (const key of ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties']) {
    if (schema[key] !== undefined && !(typeof schema[key] === 'string' && INT64.test(schema[key]))) out.push(`${path}: ${key} not an int64 string`);
  }
  for (const key of ['minimum', 'maximum']) if (schema[key] !== undefined && !Number.isFinite(schema[key])) out.push(`${path}: ${key}`);
  if (schema.nullable !== undefined && schema.nullable !== true) out.push(`${path}: nullable ${String(schema.nullable)}`);
  if (schema.description !== undefined && typeof schema.description !== 'string') out.push(`${path}: description`);
  if (schema.pattern !== undefined && typeof schema.pattern !== 'string') out.push(`${path}: pattern`);
  if (type === 'ARRAY') {
    if (schema.items === undefined) out.push(`${path}: ARRAY without items`);
    else out.push(...geminiViolations(schema.items, `${path}/items`));
  }
  if (type === 'OBJECT') out.push(...objectViolations(schema, path));
  if (schema.anyOf !== undefined) {
    if (!Array.isArray(schema.anyOf) || schema.anyOf.length < 2) out.push(`${path}: anyOf of fewer than two`);
    else schema.anyOf.forEach((branch, index) => {
      if ((branch as Node).type === undefined) out.push(`${path}/anyOf/${index}: branch without a type`);
      out.push(...geminiViolations(branch, `${path}/anyOf/${index}`));
    });
  }
  if (schema.default !== undefined) {
    const kinds: Record<string, string> = { STRING: 'string', NUMBER: 'number', INTEGER: 'number', BOOLEAN: 'boolean' };
    if (typeof schema.default !== kinds[type ?? '']) out.push(`${path}: default of another type`);
  }
  return out;
}

function objectViolations(schema: Node, path: string): string[] {
  const out: string[] = [];
  const properties = schema.properties as Record<string, unknown> | undefined;
  if (properties === undefined || Object.keys(properties).length === 0) return [`${path}: OBJECT without properties`];
  for (const [name, child] of Object.entries(properties)) {
    if (!PARAMETER_NAME.test(name)) out.push(`${path}: parameter name ${name}`);
    out.push(...geminiViolations(child, `${path}/properties/${name}`));
  }
  const required = schema.required as unknown[] | undefined;
  if (required !== undefined) {
    if (required.length === 0 || new Set(required).size !== required.length) out.push(`${path}: required empty or repeated`);
    for (const name of required) if (typeof name !== 'string' || !Object.hasOwn(properties, name)) out.push(`${path}: required ${String(name)} undeclared`);
  }
  return out;
}

/** A Gemini schema read as the JSON Schema it means (OpenAPI 3.0 semantics: `nullable` adds null). */
export function geminiAsJsonSchema(node: Node): Node {
  const nullable = node.nullable === true;
  if (node.anyOf !== undefined) {
    const branches = (node.anyOf as Node[]).map(geminiAsJsonSchema);
    return { anyOf: nullable ? [...branches, { type: 'null' }] : branches };
  }
  const type = String(node.type).toLowerCase();
  const out: Node = { type: nullable ? [type, 'null'] : type };
  if (node.enum !== undefined) out.enum = nullable ? [...(node.enum as string[]), null] : node.enum;
  if (node.format !== undefined && node.format !== 'enum') out.format = node.format;
  for (const key of ['minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties']) if (node[key] !== undefined) out[key] = Number(node[key]);
  for (const key of ['pattern', 'minimum', 'maximum', 'required']) if (node[key] !== undefined) out[key] = node[key];
  if (node.items !== undefined) out.items = geminiAsJsonSchema(node.items as Node);
  if (node.properties !== undefined) {
    out.properties = Object.fromEntries(Object.entries(node.properties as Record<string, Node>).map(([name, child]) => [name, geminiAsJsonSchema(child)]));
  }
  return out;
}

/**
 * Candidate arguments a model may call a Gemini function with: values of each node's type
 * within its bounds, objects with declared parameters only. Candidates, not guarantees
 * (a pattern and a length, or an enum and a length, are drawn apart): a test keeps those
 * the schema allows, so an unsatisfiable schema cannot stall the generator.
 */
export function geminiArguments(node: Node): fc.Arbitrary<unknown> {
  const base = node.anyOf !== undefined ? fc.oneof(...(node.anyOf as Node[]).map(geminiArguments)) : typedArguments(node);
  return node.nullable === true ? fc.oneof(base, fc.constant(null)) : base;
}

function typedArguments(node: Node): fc.Arbitrary<unknown> {
  const min = (key: string) => (node[key] === undefined ? undefined : Number(node[key]));
  switch (node.type) {
    case 'STRING': {
      if (node.enum !== undefined) return fc.constantFrom(...(node.enum as string[]));
      if (node.format === 'date-time') return fc.date({ min: new Date(0), max: new Date(4e12), noInvalidDate: true }).map((date) => date.toISOString());
      const least = min('minLength') ?? 0;
      const most = Math.max(least, Math.min(min('maxLength') ?? least + 24, least + 24));
      if (node.pattern !== undefined) return fc.stringMatching(new RegExp(node.pattern as string), { size: 'small' });
      return fc.string({ minLength: least, maxLength: most });
    }
    case 'INTEGER': {
      const low = Math.ceil((node.minimum as number | undefined) ?? -1000);
      const high = Math.floor((node.maximum as number | undefined) ?? 1000);
      return fc.oneof(fc.constantFrom(low, high), fc.integer({ min: Math.min(low, high), max: Math.max(low, high) }));
    }
    case 'NUMBER': {
      const low = (node.minimum as number | undefined) ?? -1000;
      const high = (node.maximum as number | undefined) ?? 1000;
      if (low > high) return fc.constantFrom(low, high);
      const whole = Math.ceil(low) <= Math.floor(high) ? [fc.integer({ min: Math.ceil(low), max: Math.floor(high) })] : [];
      return fc.oneof(fc.constantFrom(low, high), ...whole, fc.double({ min: low, max: high, noNaN: true }));
    }
    case 'BOOLEAN':
      return fc.boolean();
    case 'ARRAY': {
      const least = min('minItems') ?? 0;
      return fc.array(geminiArguments(node.items as Node), { minLength: least, maxLength: Math.max(least, Math.min(min('maxItems') ?? least + 4, least + 4)) });
    }
    case 'OBJECT': {
      const properties = node.properties as Record<string, Node>;
      const model = Object.fromEntries(Object.entries(properties).map(([name, child]) => [name, geminiArguments(child)]));
      return fc.record(model, { requiredKeys: (node.required as string[] | undefined) ?? [] });
    }
    default:
      throw new Error(`no arguments for ${String(node.type)}`);
  }
}

/**
 * The same schema with its local `$ref`s written out in place (`{$ref, ...rest}` becomes
 * `{...rest, allOf: [target]}`, as draft 2020-12 reads it), so that ajv's schema path for
 * a failure runs through the keyword that led there rather than starting again at `$defs`.
 * For schemas without reference cycles, as the generated ones are.
 */
export function withRefsInlined(schema: unknown, root: unknown = schema): unknown {
  if (Array.isArray(schema)) return schema.map((entry) => withRefsInlined(entry, root));
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Node = {};
  for (const [key, value] of Object.entries(schema)) if (key !== '$ref') out[key] = withRefsInlined(value, root);
  const ref = (schema as Node).$ref;
  if (typeof ref !== 'string') return out;
  const target = ref
    .slice(2)
    .split('/')
    .reduce<unknown>((node, key) => (node as Node)[key], root);
  out.allOf = [...((out.allOf as unknown[] | undefined) ?? []), withRefsInlined(target, root)];
  return out;
}

// One instance: building ajv and its formats costs more than compiling a small schema.
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
addFormats.default(ajv);

/** A draft 2020-12 validator with formats asserted and all errors (a test may read every reason). */
export function validatorOf(schema: unknown): ValidateFunction {
  return ajv.compile(schema as Node);
}

/**
 * The keywords behind a failure: each error's keyword and the keywords on its schema path
 * (a position of `prefixItems`, a branch of `oneOf`), nested branches included.
 */
export function failedKeywords(errors: readonly ErrorObject[] | null | undefined): string[] {
  return [...new Set((errors ?? []).flatMap((error) => [error.keyword, ...error.schemaPath.split('/')]))];
}
