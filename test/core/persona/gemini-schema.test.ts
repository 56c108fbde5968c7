/**
 * The translation of tool parameters to the schema Gemini's function declarations take,
 * keyword by keyword (docs/providers.md, "Tool parameters for Gemini"). Every output is
 * also held to the allow-list in test/helpers/gemini-schema.ts.
 */
import { describe, expect, it } from 'vitest';
import {
  MAX_DECLARATION_BYTES,
  MAX_LOSSES,
  MAX_SCHEMA_DEPTH,
  portablePattern,
  toGeminiFunctionDeclarations,
  toGeminiParameters,
  type GeminiSchema,
  type SchemaLoss,
} from '../../../src/core/persona/gemini-schema.js';
import { mergeSchemas } from '../../../src/core/persona/json-schema-merge.js';
import { geminiViolations } from '../../helpers/gemini-schema.js';

function translate(parameters: unknown): { parameters: GeminiSchema | undefined; losses: SchemaLoss[] } {
  const out = toGeminiParameters('tool', parameters);
  if (!out.ok) throw new Error(`refused: ${out.reason}`);
  if (out.parameters !== undefined) expect(geminiViolations(out.parameters)).toEqual([]);
  return out;
}

/** The translation of one parameter `x`, and the losses. */
function one(schema: unknown, required = false) {
  const out = translate({ type: 'object', properties: { x: schema }, required: required ? ['x'] : [], additionalProperties: false });
  return { x: out.parameters?.properties?.x, losses: out.losses.map(({ pointer, keyword }) => `${pointer} ${keyword}`) };
}

function refusal(parameters: unknown): string {
  const out = toGeminiParameters('tool', parameters);
  if (out.ok) throw new Error('translated');
  return out.reason;
}

describe('toGeminiParameters', () => {
  it('writes Gemini type names, int64 counts as strings, and drops additionalProperties: false, $schema and annotations without a loss', () => {
    const out = translate({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      title: 'args',
      properties: {
        query: { type: 'string', minLength: 1, maxLength: 300, description: 'What to look for.', examples: ['x'] },
        limit: { type: 'integer', minimum: 1, maximum: 20, default: 5, $comment: 'why' },
        tags: { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 3 },
      },
      required: ['query'],
      additionalProperties: false,
    });
    expect(out.parameters).toEqual({
      type: 'OBJECT',
      properties: {
        query: { type: 'STRING', description: 'What to look for.', minLength: '1', maxLength: '300' },
        limit: { type: 'INTEGER', minimum: 1, maximum: 20, default: 5 },
        tags: { type: 'ARRAY', items: { type: 'STRING' }, minItems: '1', maxItems: '3' },
      },
      required: ['query'],
    });
    expect(out.losses).toEqual([]);
  });

  it('a string const or enum becomes a STRING enum with format enum', () => {
    expect(one({ const: 'on' }).x).toEqual({ type: 'STRING', format: 'enum', enum: ['on'] });
    expect(one({ type: 'string', enum: ['a', 'b', 'a'] }).x).toEqual({ type: 'STRING', format: 'enum', enum: ['a', 'b'] });
    expect(one({ type: 'string', enum: ['a'] }).losses).toEqual([]);
  });

  it('a type list or an anyOf with null becomes nullable; several types become typed anyOf branches', () => {
    expect(one({ type: ['string', 'null'], maxLength: 5 }).x).toEqual({ type: 'STRING', nullable: true, maxLength: '5' });
    expect(one({ anyOf: [{ type: 'integer' }, { type: 'null' }], description: 'd' }).x).toEqual({ type: 'INTEGER', description: 'd', nullable: true });
    expect(one({ type: ['string', 'integer'], minimum: 2, minLength: 3 }).x).toEqual({
      anyOf: [
        { type: 'STRING', minLength: '3' },
        { type: 'INTEGER', minimum: 2 },
      ],
    });
    expect(one({ type: ['integer', 'number'] }).x).toEqual({ type: 'NUMBER' });
    expect(one({ enum: ['a', null] }).x).toEqual({ type: 'STRING', format: 'enum', nullable: true, enum: ['a'] });
  });

  it('an integer exclusive bound becomes the next integer exactly; a number keeps it inclusive and says so', () => {
    expect(one({ type: 'integer', exclusiveMinimum: 0, exclusiveMaximum: 10 })).toEqual({ x: { type: 'INTEGER', minimum: 1, maximum: 9 }, losses: [] });
    expect(one({ type: 'integer', exclusiveMinimum: 0.5, minimum: 3 })).toEqual({ x: { type: 'INTEGER', minimum: 3 }, losses: [] });
    expect(one({ type: 'integer', minimum: 4, exclusiveMinimum: true })).toEqual({ x: { type: 'INTEGER', minimum: 5 }, losses: [] });
    expect(one({ type: 'number', exclusiveMinimum: 0 })).toEqual({
      x: { type: 'NUMBER', description: 'Greater than 0.', minimum: 0 },
      losses: ['#/properties/x exclusiveMinimum'],
    });
  });

  it('keeps date-time and the numeric formats Gemini lists; says any other format in words', () => {
    expect(one({ type: 'string', format: 'date-time' }).x).toEqual({ type: 'STRING', format: 'date-time' });
    expect(one({ type: 'integer', format: 'int64' }).x).toEqual({ type: 'INTEGER', format: 'int64' });
    expect(one({ type: 'number', format: 'double' }).x).toEqual({ type: 'NUMBER', format: 'double' });
    expect(one({ type: 'string', format: 'uri', description: 'A link.' })).toEqual({
      x: { type: 'STRING', description: 'A link. Format: uri.' },
      losses: ['#/properties/x format'],
    });
  });

  it('keeps a pattern both dialects read alike; says any other in words', () => {
    expect(one({ type: 'string', pattern: '^\\d{4}-\\d{2}$' }).x).toEqual({ type: 'STRING', pattern: '^\\d{4}-\\d{2}$' });
    const lookahead = one({ type: 'string', pattern: '^(?=a)[a-z]+$' });
    expect(lookahead.x).toEqual({ type: 'STRING', description: 'Must match the regular expression "^(?=a)[a-z]+$".' });
    expect(lookahead.losses).toEqual(['#/properties/x pattern']);
    for (const good of ['^[a-z0-9][a-z0-9._-]*(?:/[a-z0-9][a-z0-9._-]*)*$', '^https?://\\S+$', 'a{2,1000}', '[\\]\\-]']) expect(portablePattern(good), good).toBe(true);
    for (const bad of ['(?<name>a)', '(a)\\1', '\\p{L}', '\\u0041', '[^]', 'a{1001}', '(?!a)', '[\\b]', '[a', '\\']) expect(portablePattern(bad), bad).toBe(false);
  });

  it('says multipleOf, uniqueItems, contains, not, if/then/else and non-string enums in words, each a loss', () => {
    const out = translate({
      type: 'object',
      properties: {
        step: { type: 'integer', multipleOf: 5 },
        ids: { type: 'array', items: { type: 'integer' }, uniqueItems: true, contains: { const: 1 } },
        name: { type: 'string', not: { const: 'root' } },
        size: { type: 'integer', enum: [1, 2, 3] },
        on: { type: 'boolean', const: true },
      },
      if: { required: ['step'] },
      then: { required: ['ids'] },
    });
    expect(out.parameters?.properties?.step?.description).toBe('A multiple of 5.');
    expect(out.parameters?.properties?.ids?.description).toBe('No two items may be equal. At least 1 of the items must match {"const":1}.');
    expect(out.parameters?.properties?.name?.description).toBe('Must not match {"const":"root"}.');
    expect(out.parameters?.properties?.size).toEqual({ type: 'INTEGER', description: 'One of 1, 2 or 3.' });
    expect(out.parameters?.properties?.on).toEqual({ type: 'BOOLEAN', description: 'Must be true.' });
    expect(out.parameters?.description).toBe('If it matches {"required":["step"]}, it must match {"required":["ids"]}.');
    expect(out.losses.map((loss) => `${loss.pointer} ${loss.keyword}`)).toEqual([
      '# if',
      '#/properties/step multipleOf',
      '#/properties/ids uniqueItems',
      '#/properties/ids contains',
      '#/properties/name not',
      '#/properties/size enum',
      '#/properties/on const',
    ]);
  });

  it('a boolean enum of both values is no loss', () => {
    expect(one({ enum: [true, false] })).toEqual({ x: { type: 'BOOLEAN' }, losses: [] });
  });

  it('inlines $ref and $defs, merging a $ref’s siblings and allOf branches', () => {
    const out = translate({
      type: 'object',
      $defs: { slug: { type: 'string', pattern: '^[a-z]+$', maxLength: 40 }, base: { properties: { a: { type: 'integer' } }, required: ['a'] } },
      properties: {
        page: { $ref: '#/$defs/slug', description: 'The page.', maxLength: 20 },
        both: { allOf: [{ $ref: '#/$defs/base' }, { type: 'object', properties: { b: { type: 'boolean' } } }] },
      },
    });
    expect(out.parameters?.properties).toEqual({
      page: { type: 'STRING', description: 'The page.', maxLength: '20', pattern: '^[a-z]+$' },
      both: { type: 'OBJECT', properties: { a: { type: 'INTEGER' }, b: { type: 'BOOLEAN' } }, required: ['a'] },
    });
    expect(out.losses).toEqual([]);
  });

  it('an allOf of two patterns keeps the first and reports the second', () => {
    expect(one({ allOf: [{ type: 'string', pattern: '^a' }, { pattern: 'b$' }] })).toEqual({ x: { type: 'STRING', pattern: '^a' }, losses: ['#/properties/x pattern'] });
  });

  it('regression: a $ref cycle is refused, never expanded until the stack overflows', () => {
    expect(refusal({ type: 'object', properties: { node: { $ref: '#/$defs/tree' } }, $defs: { tree: { type: 'object', properties: { child: { $ref: '#/$defs/tree' } } } } })).toMatch(
      /refers to itself/,
    );
    expect(refusal({ type: 'object', properties: { me: { $ref: '#' } } })).toMatch(/refers to itself/);
  });

  it('refuses what it cannot resolve or bound: another document, an anchor, too deep, too many nodes', () => {
    expect(refusal({ type: 'object', properties: { a: { $ref: 'https://example.com/s.json' } } })).toMatch(/names no schema/);
    expect(refusal({ type: 'object', properties: { a: { $ref: '#anchor' } } })).toMatch(/names no schema/);
    let deep: unknown = { type: 'string' };
    for (let i = 0; i <= MAX_SCHEMA_DEPTH; i++) deep = { type: 'object', properties: { a: deep } };
    expect(refusal(deep)).toMatch(/deeper than 16/);
    // Each level refers to the next twice: 10 levels, well within the depth, inline to 2^10 nodes.
    const defs = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`d${i}`, { type: 'object', properties: { l: { $ref: `#/$defs/d${i + 1}` }, r: { $ref: `#/$defs/d${i + 1}` } } }]));
    expect(refusal({ type: 'object', $defs: { ...defs, d10: { type: 'string' } }, properties: { x: { $ref: '#/$defs/d0' } } })).toMatch(/more than 400 schema nodes/);
  });

  it('refuses malformed keywords and parameters that are not one object', () => {
    expect(refusal({ type: 'object', properties: { a: { type: 'string', maxLength: -1 } } })).toMatch(/maxLength/);
    expect(refusal({ type: 'object', properties: { a: { type: 'text' } } })).toMatch(/not a JSON Schema type/);
    expect(refusal({ type: 'string' })).toMatch(/not one object/);
    expect(refusal({ anyOf: [{ type: 'object', properties: { a: { type: 'string' } } }, { type: 'object', properties: { b: { type: 'string' } } }] })).toMatch(/not one object/);
  });

  it('an object without declarable parameters: no parameters at the top, left out (a loss) below', () => {
    expect(toGeminiParameters('tool', { type: 'object', properties: {}, additionalProperties: false })).toEqual({ ok: true, parameters: undefined, losses: [], unreported: 0 });
    const out = one({ type: 'object', additionalProperties: { type: 'string' } }, true);
    expect(out.x).toBeUndefined();
    expect(out.losses).toEqual(['#/properties/x additionalProperties', '# required']);
  });

  it('leaves out, as losses, parameters Gemini cannot name or declare', () => {
    const out = translate({
      type: 'object',
      properties: { 'bad-name': { type: 'string' }, nothing: false, onlyNull: { type: 'null' }, ok: { type: 'string' } },
      required: ['bad-name', 'nothing', 'ghost'],
    });
    expect(Object.keys(out.parameters?.properties ?? {})).toEqual(['ok']);
    expect(out.parameters?.required).toBeUndefined();
    expect(out.losses.map((loss) => `${loss.keyword}: ${loss.lost}`)).toEqual([
      'required: parameter "bad-name" is not a name Gemini takes (a letter or _, then letters, digits or _, at most 64); left out',
      'required: parameter "nothing" allows no value; left out',
      'properties: parameter "onlyNull" allows only null; left out',
      'required: required "ghost" is not a declared parameter; Gemini requires only declared ones',
    ]);
  });

  it('a schema that says nothing of its type is declared as a nullable string, and that is a loss', () => {
    expect(one({ description: 'anything' })).toEqual({ x: { type: 'STRING', description: 'anything', nullable: true }, losses: ['#/properties/x type'] });
    expect(one(true).x).toEqual({ type: 'STRING', nullable: true });
  });

  it('an array without items gets items; prefixItems are said in words', () => {
    expect(one({ type: 'array', items: false })).toEqual({ x: { type: 'ARRAY', items: { type: 'STRING' }, maxItems: '0' }, losses: [] });
    const tuple = one({ type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], items: false });
    expect(tuple.x).toEqual({
      type: 'ARRAY',
      description: 'Items by position: [{"type":"string"},{"type":"integer"}].',
      items: { anyOf: [{ type: 'STRING' }, { type: 'INTEGER' }] },
      maxItems: '2',
    });
    expect(tuple.losses).toEqual(['#/properties/x prefixItems']);
  });

  it('oneOf of distinct types is anyOf without a loss; of overlapping ones, a loss', () => {
    expect(one({ oneOf: [{ type: 'string' }, { type: 'boolean' }] })).toEqual({ x: { anyOf: [{ type: 'STRING' }, { type: 'BOOLEAN' }] }, losses: [] });
    expect(one({ oneOf: [{ type: 'integer' }, { type: 'number' }] }).losses).toEqual(['#/properties/x oneOf']);
    expect(one({ oneOf: [{ type: 'string', maxLength: 3 }, { type: 'string', pattern: '^a' }] }).losses).toEqual(['#/properties/x oneOf']);
  });

  it('distributes an anyOf’s siblings into every branch, so no node has both a type and anyOf', () => {
    expect(one({ type: 'string', maxLength: 9, anyOf: [{ pattern: '^a' }, { format: 'date-time' }] }).x).toEqual({
      anyOf: [
        { type: 'STRING', maxLength: '9', pattern: '^a' },
        { type: 'STRING', format: 'date-time', maxLength: '9' },
      ],
    });
  });

  it('bounds what it writes: each loss line, the losses per tool, the words added to a description', () => {
    const properties = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`p${i}`, { type: 'integer', multipleOf: 3, const: 9 }]));
    const out = toGeminiParameters('tool', { type: 'object', properties });
    if (!out.ok) throw new Error(out.reason);
    expect(out.losses).toHaveLength(MAX_LOSSES);
    expect(out.unreported).toBe(40 * 2 - MAX_LOSSES);
    const long = one({ type: 'string', pattern: `(?=${'a'.repeat(5000)})` });
    expect(long.x?.description?.length).toBeLessThanOrEqual(400);
    const warning = toGeminiFunctionDeclarations([{ type: 'function', name: 'tool', description: 'd', parameters: { type: 'object', properties: { ['x'.repeat(60)]: { not: { const: 'y'.repeat(5000) } } }, additionalProperties: false } }]).warnings;
    for (const line of warning) expect(line.length).toBeLessThan(320);
  });

  it('regression: a 20,000-value enum $ref’d 130 times is declared in at most 64 KiB, the enums past it as strings with a loss (it wrote 22 MB)', () => {
    const values = Array.from({ length: 20_000 }, (_, i) => `value-${i}`);
    const properties = Object.fromEntries(Array.from({ length: 130 }, (_, i) => [`p${i}`, { $ref: '#/$defs/big' }]));
    const out = translate({ type: 'object', $defs: { big: { type: 'string', enum: values } }, properties });
    expect(Buffer.byteLength(JSON.stringify(out.parameters))).toBeLessThanOrEqual(MAX_DECLARATION_BYTES);
    expect(Object.keys(out.parameters?.properties ?? {})).toHaveLength(130);
    expect(out.parameters?.properties?.p0).toEqual({ type: 'STRING', description: 'One of "value-0", "value-1", "value-2", "value-3", "value-4", "value-5", "value-6", "value-7" or 19992 more.' });
    expect(out.losses[0]).toMatchObject({ pointer: '#/properties/p0', keyword: 'enum' });
    expect(out.losses[0]!.lost).toMatch(/^20000 values take more than is left of the 64 KiB a tool's declaration may take; declared as any string/);
  });

  it('keeps what fits the 64 KiB in order and cuts the rest: an enum that fits stays exact, a long description is cut, each a loss', () => {
    const small = Array.from({ length: 50 }, (_, i) => `s${i}`);
    const properties = {
      mode: { type: 'string', enum: small },
      ...Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`note${i}`, { type: 'string', description: `${'word '.repeat(4_000)}${i}`, pattern: '^[a-z]+$' }])),
    };
    const out = translate({ type: 'object', properties });
    const bytes = Buffer.byteLength(JSON.stringify(out.parameters));
    expect(bytes).toBeLessThanOrEqual(MAX_DECLARATION_BYTES);
    expect(bytes).toBeGreaterThan(MAX_DECLARATION_BYTES - 2_048);
    expect(out.parameters?.properties?.mode).toEqual({ type: 'STRING', format: 'enum', enum: small });
    // 20 KB descriptions: three fit whole, the fourth is cut, the rest keep none of theirs.
    const said = Array.from({ length: 8 }, (_, i) => out.parameters?.properties?.[`note${i}`]?.description ?? '');
    expect(said.slice(0, 3).every((text, i) => text.endsWith(` ${i}`))).toBe(true);
    expect(said[3]!.endsWith('…')).toBe(true);
    expect(said.slice(4).every((text) => text.length <= 1)).toBe(true);
    expect(out.losses.map((loss) => `${loss.pointer} ${loss.keyword}`)).toContain('#/properties/note3 description');
  });

  it('counts the nodes’ own bytes too: an enum that fits the text’s room but not beside 300 parameters is said in words, the tool kept', () => {
    const names = Array.from({ length: 300 }, (_, i) => `parameter_${String(i).padStart(3, '0')}_${'n'.repeat(44)}`);
    const properties = Object.fromEntries(names.map((name) => [name, { type: 'integer', minimum: 0, maximum: 9 }]));
    const big = Array.from({ length: 4_000 }, (_, i) => `choice-${i}`);
    const out = translate({ type: 'object', properties: { ...properties, pick: { type: 'string', enum: big } }, required: names });
    expect(Buffer.byteLength(JSON.stringify(out.parameters))).toBeLessThanOrEqual(MAX_DECLARATION_BYTES);
    expect(Object.keys(out.parameters?.properties ?? {})).toHaveLength(301);
    expect(out.parameters?.properties?.pick?.enum).toBeUndefined();
    expect(out.losses.map((loss) => `${loss.pointer} ${loss.keyword}`)).toEqual(['#/properties/pick enum']);
    // Without the parameters, the same enum fits.
    expect(one({ type: 'string', enum: big }).x?.enum).toHaveLength(4_000);
  });

  it('regression: an allOf of two enums keeps the values in both, objects equal whatever their key order (it compared by JSON text, quadratically)', () => {
    const left = Array.from({ length: 10_000 }, (_, i) => `v${i}`);
    const right = Array.from({ length: 10_000 }, (_, i) => `v${i * 2}`);
    expect(one({ allOf: [{ enum: left }, { enum: right }] }).x?.enum).toEqual(left.filter((_, i) => i % 2 === 0));
    const objects = mergeSchemas({ enum: [{ a: 1, b: [{ c: 2, d: 3 }] }, { a: 2 }, 'x'] }, { enum: [{ b: [{ d: 3, c: 2 }], a: 1 }, 'x', { ['__proto__']: 1 }] });
    expect(objects).toEqual({ schema: { enum: [{ a: 1, b: [{ c: 2, d: 3 }] }, 'x'] }, conflicts: [] });
  });

  it('does not change its input', () => {
    const input = { type: 'object', $defs: { s: { type: 'string' } }, properties: { a: { $ref: '#/$defs/s' }, b: { allOf: [{ type: 'integer' }, { minimum: 1 }] } } };
    const before = structuredClone(input);
    translate(input);
    expect(input).toEqual(before);
  });
});

describe('toGeminiFunctionDeclarations', () => {
  it('keeps name and description, omits parameters for none, and leaves out a tool it cannot declare with a warning', () => {
    const out = toGeminiFunctionDeclarations([
      { type: 'function', name: 'ping', description: 'Ping.', parameters: { type: 'object', properties: {}, additionalProperties: false } },
      { type: 'function', name: 'loop', description: 'Loops.', parameters: { type: 'object', properties: { a: { $ref: '#' } }, additionalProperties: false } },
      { type: 'function', name: 'open', description: 'Opens.', parameters: { type: 'object', properties: { url: { type: 'string', format: 'uri' } }, additionalProperties: false } },
    ]);
    expect(out.functionDeclarations).toEqual([
      { name: 'ping', description: 'Ping.' },
      { name: 'open', description: 'Opens.', parameters: { type: 'OBJECT', properties: { url: { type: 'STRING', description: 'Format: uri.' } } } },
    ]);
    expect(out.warnings).toEqual([
      'gemini-schema: loop is left out: $ref "#" at #/properties/a refers to itself; Gemini\'s schema has no recursion',
      'gemini-schema: open #/properties/url: format "uri": Gemini takes only date-time (and enum) for strings; said in the description',
    ]);
  });
});
