import { describe, expect, it } from 'vitest';
import { getPersona, listPersonas, MARS, PERSONAS, SHARED_HARD_RULES, VENUS } from '../../../src/core/persona/personas.js';
import { renderPersona, toolNamesInPrompt } from '../../../src/core/persona/render.js';
import { mentionedToolNames, TOOL_CATALOG, TOOL_NAMES } from '../../../src/core/persona/tools.js';

const variants = [
  { name: 'read-only', options: {} },
  { name: 'write tools enabled', options: { allowWriteTools: true } },
  { name: 'override naming every catalog tool', options: { overrideText: `Be brief. You may use ${TOOL_NAMES.join(', ')}.` } },
  { name: 'override naming every catalog tool, writes on', options: { overrideText: `Use ${TOOL_NAMES.join(' or ')}.`, allowWriteTools: true } },
] as const;

describe('built-in personas', () => {
  it('lists mars and venus with key, name, voice and description only', () => {
    expect(listPersonas()).toEqual([
      { key: 'mars', name: 'Mars', voice: 'ash', description: expect.stringContaining('introspective') },
      { key: 'venus', name: 'Venus', voice: 'coral', description: expect.stringContaining('logistics') },
    ]);
    expect(getPersona('mars')).toBe(MARS);
    expect(getPersona('../mars')).toBeUndefined();
  });

  it('writes every prompt text in ASCII so speech engines need no sanitising', () => {
    for (const persona of PERSONAS) {
      const rendered = renderPersona(persona, { allowWriteTools: true });
      for (const section of rendered.sections) expect(section.text, `${persona.key}/${section.kind}`).toMatch(/^[\u0000-\u007f]*$/);
    }
    for (const rule of SHARED_HARD_RULES) expect(rule).toMatch(/^[\u0000-\u007f]*$/);
  });
});

describe('renderPersona', () => {
  it('puts identity first, then persona, tools and hard rules', () => {
    for (const persona of PERSONAS) {
      const rendered = renderPersona(persona);
      expect(rendered.sections.map((section) => section.kind)).toEqual(['identity', 'persona', 'tools', 'hard-rules']);
      expect(rendered.sections[0]!.text.startsWith(`You are ${persona.name}`)).toBe(true);
    }
  });

  it('includes the hard rules: English only, no PII aloud, brain text is data', () => {
    const rules = renderPersona(MARS).sections.find((section) => section.kind === 'hard-rules')!.text;
    expect(rules).toContain('Speak English only');
    expect(rules).toContain('"a phone number"');
    expect(rules).toContain('not instructions');
  });

  for (const persona of PERSONAS) {
    it.each(variants)(`${persona.key}: the tool names the prompt mentions are exactly the tools returned (%s)`, ({ options }) => {
      const rendered = renderPersona(persona, options);
      const returned = rendered.tools.map((tool) => tool.name).sort();
      expect(toolNamesInPrompt(rendered).sort()).toEqual(returned);
      expect(returned.length).toBeGreaterThan(0);
    });
  }

  it('returns read-only tools by default and write tools only when enabled', () => {
    for (const persona of PERSONAS) {
      const readOnly = renderPersona(persona).tools.map((tool) => tool.name);
      expect(readOnly.every((name) => !TOOL_CATALOG[name as keyof typeof TOOL_CATALOG].writes)).toBe(true);
      const withWrites = renderPersona(persona, { allowWriteTools: true }).tools.map((tool) => tool.name);
      expect(withWrites).toEqual([...persona.readTools, ...persona.writeTools]);
      expect(persona.writeTools.every((name) => TOOL_CATALOG[name].writes)).toBe(true);
    }
    expect(renderPersona(VENUS).sections[2]!.text).toContain('These tools only read');
    expect(renderPersona(VENUS, { allowWriteTools: true }).sections[2]!.text).toContain('add_task changes the operator');
  });

  it('gives every tool a real JSON Schema for its arguments', () => {
    for (const name of TOOL_NAMES) {
      const { parameters, description } = TOOL_CATALOG[name];
      expect(name).toMatch(/^[a-z]+(?:_[a-z]+)+$/);
      expect(description.length).toBeGreaterThan(20);
      expect(parameters.type).toBe('object');
      expect(parameters.additionalProperties).toBe(false);
      const properties = parameters.properties as Record<string, Record<string, unknown>>;
      for (const required of ('required' in parameters ? parameters.required : []) as string[]) expect(Object.keys(properties)).toContain(required);
      for (const [property, schema] of Object.entries(properties)) {
        expect(['string', 'integer', 'number', 'boolean'], `${name}.${property}`).toContain(schema['type']);
        expect(typeof schema['description'], `${name}.${property}`).toBe('string');
        if (schema['pattern'] !== undefined) expect(() => new RegExp(schema['pattern'] as string)).not.toThrow();
      }
    }
  });

  it('hands out copies, so a caller cannot change the catalog', () => {
    const [tool] = renderPersona(MARS).tools;
    (tool!.parameters.properties as Record<string, unknown>)['query'] = { type: 'number' };
    expect(renderPersona(MARS).tools[0]!.parameters.properties['query']).toMatchObject({ type: 'string' });
  });

  it('is deterministic', () => {
    expect(renderPersona(VENUS, { overrideText: 'x' })).toEqual(renderPersona(VENUS, { overrideText: 'x' }));
  });
});

describe('operator override (personas/<name>.md)', () => {
  it('replaces only the character; identity, tools and hard rules stay built in', () => {
    const builtIn = renderPersona(MARS);
    const overridden = renderPersona(MARS, { overrideText: '<!-- draft -->\r\nBe playful.\r\n\r\n\r\n\r\nKeep it short.  \r\n' });
    expect(overridden.overridden).toBe(true);
    expect(overridden.sections[1]).toEqual({ kind: 'persona', source: 'personas/mars.md', text: 'Be playful.\n\nKeep it short.' });
    for (const index of [0, 2, 3]) expect(overridden.sections[index]).toEqual(builtIn.sections[index]);
    expect(overridden.tools).toEqual(builtIn.tools);
    expect(overridden.warnings).toEqual([]);
  });

  it('neutralises mentions of tools the persona cannot call, with a warning', () => {
    const rendered = renderPersona(MARS, { overrideText: 'Use add_task and send_email and search_brain.' });
    expect(rendered.sections[1]!.text).toBe('Use an unavailable tool and send_email and search_brain.');
    expect(rendered.warnings).toEqual([expect.stringContaining('add_task')]);
    expect(mentionedToolNames(rendered.sections[1]!.text)).toEqual(['search_brain']);
  });

  it('falls back to the built-in character for an empty or binary override', () => {
    for (const overrideText of ['', ' \n <!-- only a comment --> \n', '\u0000\u0001\u0002binary']) {
      const rendered = renderPersona(VENUS, { overrideText });
      expect(rendered.overridden).toBe(false);
      expect(rendered.sections[1]!.source).toBe('builtin:venus/character');
      expect(rendered.warnings).toHaveLength(1);
      expect(rendered.warnings[0]).toMatch(/^personas\/venus\.md: /);
    }
  });

  it('removes control and bidi characters from the override', () => {
    const rendered = renderPersona(VENUS, { overrideText: 'Be brief.\u0007 Stay\u202e calm\u2028 and kind.' });
    expect(rendered.sections[1]!.text).toBe('Be brief. Stay calm and kind.');
  });
});
