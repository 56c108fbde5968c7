/**
 * The translator's two promises, as properties (issue 24): for every tool in the catalogue
 * and for random valid JSON Schemas, (1) the output uses only what Gemini's schema takes
 * (the allow-list in test/helpers/gemini-schema.ts, written apart from src/), and (2) any
 * arguments valid under the output are valid under the input — or ajv's reason for
 * refusing them is a keyword the translator reported as lost.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PERSONAS } from '../../../src/core/persona/personas.js';
import { toGeminiFunctionDeclarations, toGeminiParameters, type GeminiSchema, type SchemaLoss } from '../../../src/core/persona/gemini-schema.js';
import { selectTools, TOOL_CATALOG, TOOL_NAMES } from '../../../src/core/persona/tools.js';
import { failedKeywords, geminiArguments, geminiAsJsonSchema, geminiViolations, validatorOf, withRefsInlined } from '../../helpers/gemini-schema.js';

/** Arguments drawn per schema: enough to meet each dropped bound, few enough to try many schemas. */
const ARGUMENTS_PER_SCHEMA = 40;

interface Tally {
  /** Candidate arguments drawn from the output. */
  drawn: number;
  /** Of those, the ones the output allows: each checked against the input. */
  allowed: number;
  /** Of those, the ones the input refuses, each for a reported loss. */
  refused: number;
}

/**
 * Checks one tool: the output passes the allow-list, and every candidate argument the
 * output allows is allowed by the input, or refused for a reported loss.
 */
function holdsPromises(tool: string, parameters: Record<string, unknown>, seed: number): Tally {
  const translated = toGeminiParameters(tool, parameters);
  if (!translated.ok) throw new Error(`${tool} refused: ${translated.reason}`);
  expect(translated.unreported).toBe(0);
  const output: GeminiSchema = translated.parameters ?? { type: 'OBJECT', properties: {} };
  if (translated.parameters !== undefined) expect(geminiViolations(output), JSON.stringify(output)).toEqual([]);
  const lost = new Set(translated.losses.map((loss: SchemaLoss) => loss.keyword));
  const input = validatorOf(withRefsInlined(parameters));
  const asJson = validatorOf(geminiAsJsonSchema(output as Record<string, unknown>));
  // As JSON: what a model's function call carries (and plain objects, as a JSON parser makes them).
  const args = (translated.parameters === undefined ? [{}] : fc.sample(geminiArguments(output as Record<string, unknown>), { numRuns: ARGUMENTS_PER_SCHEMA, seed })).map(
    (value) => JSON.parse(JSON.stringify(value)) as unknown,
  );
  const tally: Tally = { drawn: args.length, allowed: 0, refused: 0 };
  for (const value of args) {
    if (!asJson(value)) continue;
    tally.allowed += 1;
    if (input(value)) continue;
    tally.refused += 1;
    const reasons = failedKeywords(input.errors);
    expect(
      reasons.some((keyword) => lost.has(keyword)),
      `${JSON.stringify(value)} is valid for Gemini, refused by the input for ${reasons.join(', ')}, and no loss says so (losses: ${[...lost].join(', ') || 'none'})\ninput: ${JSON.stringify(parameters)}\noutput: ${JSON.stringify(output)}`,
    ).toBe(true);
  }
  return tally;
}

describe('the catalogue in Gemini’s schema', () => {
  it('every catalogue tool holds both promises', () => {
    expect(TOOL_NAMES).toHaveLength(11);
    for (const [index, name] of TOOL_NAMES.entries()) {
      const tally = holdsPromises(name, TOOL_CATALOG[name].parameters, index + 1);
      expect(tally.allowed, name).toBeGreaterThanOrEqual(tally.drawn / 2);
    }
  });

  it('regression: each persona’s tools, with and without write tools, are all declared without a loss (read_article’s url had a format Gemini does not take)', () => {
    for (const persona of PERSONAS) {
      for (const allowWriteTools of [false, true]) {
        const offered = selectTools(persona.key, persona, { allowWriteTools }).offered.map(({ tool }) => tool);
        const { functionDeclarations, warnings } = toGeminiFunctionDeclarations(offered);
        expect(functionDeclarations.map((declaration) => declaration.name)).toEqual(offered.map((tool) => tool.name));
        expect(functionDeclarations.map((declaration) => declaration.description)).toEqual(offered.map((tool) => tool.description));
        expect(warnings).toEqual([]);
      }
    }
  });
});

// Random valid JSON Schemas (draft 2020-12), built from the keywords tool parameters use and
// the ones Gemini lacks. Patterns come from a pool so that arguments can be generated from
// the ones Gemini keeps; some of the pool are not portable and must be dropped.
const PATTERNS = ['^[a-z]{1,8}$', '^[a-z0-9][a-z0-9._-]*$', '^\\d{4}-\\d{2}-\\d{2}$', '^[A-Z][a-z]*$', '^(?=[a-z])[a-z0-9]{1,6}$', '^\\p{L}+$'];
const NAMES = ['a', 'b', 'c_d', 'e1', 'bad-name', '9x'];
const VALUES = ['a', 'b', 'c', 0, 1, 2, 2.5, true, false, null];
const annotate = <T extends Record<string, unknown>>(schema: fc.Arbitrary<T>) =>
  fc.tuple(schema, fc.option(fc.constantFrom('A value.', 'Said twice.'), { nil: undefined }), fc.boolean()).map(([base, description, extra]) => ({
    ...base,
    ...(description === undefined ? {} : { description }),
    ...(extra ? { title: 'T', examples: ['x'], $comment: 'c' } : {}),
  }));

const range = (low: number, high: number) => fc.tuple(fc.integer({ min: low, max: high }), fc.integer({ min: 0, max: 20 })).map(([a, b]) => [a, a + b] as const);

const stringSchema = annotate(
  fc.record(
    {
      type: fc.constant('string'),
      lengths: fc.option(range(0, 5), { nil: undefined }),
      pattern: fc.constantFrom(...PATTERNS),
      format: fc.constantFrom('date-time', 'uri', 'email', 'date'),
      usePattern: fc.boolean(),
      useFormat: fc.boolean(),
    },
    { requiredKeys: ['type', 'usePattern', 'useFormat'] },
  ).map(({ type, lengths, pattern, format, usePattern, useFormat }) => ({
    type,
    ...(usePattern && pattern !== undefined ? { pattern } : lengths === undefined ? {} : { minLength: lengths[0], maxLength: lengths[1] }),
    ...(!usePattern && useFormat && format !== undefined ? { format } : {}),
  })),
);

const numberSchema = annotate(
  fc.record({
    type: fc.constantFrom('integer', 'number'),
    bounds: range(-20, 20),
    exclusive: fc.constantFrom('none', 'min', 'max', 'both', 'fraction'),
    multipleOf: fc.constantFrom(undefined, 1, 2, 0.5),
  }).map(({ type, bounds: [low, high], exclusive, multipleOf }) => ({
    type,
    ...(exclusive === 'none' || exclusive === 'max' ? { minimum: low } : { exclusiveMinimum: exclusive === 'fraction' ? low - 0.5 : low - 1 }),
    ...(exclusive === 'both' || exclusive === 'max' ? { exclusiveMaximum: high + 1 } : { maximum: high }),
    ...(multipleOf === undefined ? {} : { multipleOf }),
  })),
);

const valueSchema = fc.oneof(
  fc.record({ type: fc.constant('boolean') }),
  fc.uniqueArray(fc.constantFrom(...VALUES), { minLength: 1, maxLength: 4 }).map((values) => ({ enum: values })),
  fc.constantFrom(...VALUES).map((value) => ({ const: value })),
  fc.constantFrom('string', 'integer', 'boolean').map((type) => ({ type: [type, 'null'] })),
  fc.uniqueArray(fc.constantFrom('a', 'b', 'c'), { minLength: 1, maxLength: 3 }).map((values) => ({ type: 'string', enum: values })),
  fc.constantFrom({}, { description: 'Anything.' }, true),
  fc.constantFrom({ $ref: '#/$defs/slug' }, { $ref: '#/$defs/count', description: 'How many.' }),
  fc.constantFrom(
    { type: 'string', not: { const: 'a' } },
    { allOf: [{ type: 'string' }, { type: 'integer' }] },
    { allOf: [{ type: ['string', 'integer'] }, { type: 'number', maximum: 3 }] },
    { type: ['string', 'integer', 'boolean', 'null'], minLength: 2, minimum: 1 },
    { enum: [[1], 'a', { k: 1 }] },
    { const: { k: 1 } },
    { type: 'object', minProperties: 1, properties: { a: { type: 'integer' } } },
  ),
);

const leaf = fc.oneof(stringSchema, numberSchema, valueSchema);

const { node } = fc.letrec<{ node: unknown; object: Record<string, unknown> }>((tie) => ({
  node: fc.oneof(
    { maxDepth: 2, depthSize: 'small', withCrossShrink: true },
    leaf,
    leaf,
    tie('object'),
    fc.record({ items: tie('node'), minItems: fc.integer({ min: 0, max: 2 }), uniqueItems: fc.boolean() }).map((array) => ({ type: 'array', ...array })),
    fc.record({ prefixItems: fc.array(leaf, { minLength: 1, maxLength: 2 }), items: fc.constantFrom(false, true) }).map((array) => ({ type: 'array', ...array })),
    fc.array(tie('node'), { minLength: 2, maxLength: 2 }).map((branches) => ({ anyOf: branches })),
    fc.array(tie('node'), { minLength: 2, maxLength: 2 }).map((branches) => ({ oneOf: branches })),
    fc.tuple(tie('object'), tie('object')).map((branches) => ({ allOf: branches })),
    fc.tuple(stringSchema, stringSchema).map((branches) => ({ allOf: branches })),
  ),
  object: fc
    .record({
      properties: fc.dictionary(fc.constantFrom(...NAMES), tie('node'), { minKeys: 1, maxKeys: 2 }),
      requiredNames: fc.uniqueArray(fc.constantFrom(...NAMES), { maxLength: 3 }),
      additionalProperties: fc.constantFrom(undefined, false, true, { type: 'integer' }),
      extra: fc.constantFrom(
        {},
        {},
        { patternProperties: { '^x': { type: 'string' } } },
        { propertyNames: { pattern: '^[a-z]' } },
        { dependentRequired: { a: ['b'] } },
        { if: { required: ['a'] }, then: { required: ['b'] } },
        { minProperties: 1 },
      ),
    })
    .map(({ properties, requiredNames, additionalProperties, extra }) => ({
      type: 'object',
      properties,
      ...(requiredNames.length > 0 ? { required: requiredNames } : {}),
      ...(additionalProperties === undefined ? {} : { additionalProperties }),
      ...extra,
    })),
}));

const toolParameters = fc
  .record({
    properties: fc.dictionary(fc.constantFrom(...NAMES), node, { minKeys: 1, maxKeys: 3 }),
    requiredNames: fc.uniqueArray(fc.constantFrom(...NAMES), { maxLength: 3 }),
    header: fc.boolean(),
  })
  .map(({ properties, requiredNames, header }) => ({
    ...(header ? { $schema: 'https://json-schema.org/draft/2020-12/schema' } : {}),
    type: 'object',
    properties,
    ...(requiredNames.length > 0 ? { required: requiredNames } : {}),
    additionalProperties: false,
    $defs: { slug: { type: 'string', pattern: '^[a-z0-9][a-z0-9._-]*$', maxLength: 40 }, count: { type: 'integer', exclusiveMinimum: 0, maximum: 9 } },
  }));

describe('random JSON Schemas in Gemini’s schema', () => {
  it('hold both promises', () => {
    let schemas = 0;
    const total: Tally = { drawn: 0, allowed: 0, refused: 0 };
    fc.assert(
      fc.property(toolParameters, fc.integer({ min: 1, max: 2 ** 30 }), (generated, seed) => {
        const parameters = JSON.parse(JSON.stringify(generated)) as Record<string, unknown>;
        validatorOf(parameters); // a valid JSON Schema: ajv compiles it
        // The report holds MAX_LOSSES losses and only counts the rest (gemini-schema.test.ts
        // checks that cap), so the second promise can be held only to a schema whose losses
        // all fit in it. A schema with more is passed over and another drawn (seed 193131172 drew one
        // with 33 losses, and the property failed on a count it was never meant to hold).
        const translated = toGeminiParameters('random', parameters);
        fc.pre(!translated.ok || translated.unreported === 0);
        const tally = holdsPromises('random', parameters, seed);
        total.drawn += tally.drawn;
        total.allowed += tally.allowed;
        total.refused += tally.refused;
        schemas += 1;
      }),
      { numRuns: 300 },
    );
    // Most candidates must be arguments the output allows, and the input must refuse some of
    // them, or the second promise was hardly tested.
    expect(schemas).toBe(300);
    expect(total.allowed).toBeGreaterThan(total.drawn / 2);
    expect(total.refused).toBeGreaterThan(0);
  }, 120_000);
});
