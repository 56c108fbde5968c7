import { describe, expect, it } from 'vitest';
import { CALL_RULES, CANNOT_SAVE, ENGLISH_ONLY, listPersonas, MARS, PERSONAS, sharedHardRules, VENUS, VENUS_TERRITORY } from '../../../src/core/persona/personas.js';
import { getPersona } from '../../../src/sources/persona/request.js';
import { renderPersona, toolNamesInPrompt } from '../../../src/core/persona/render.js';
import {
  KNOWN_TOOL_NAMES,
  mentionedToolNames,
  READ_TOOL_NAMES,
  resolveToolReferences,
  TOOL_CATALOG,
  TOOL_NAMES,
  WRITE_TOOL_NAMES,
  type ToolsFile,
} from '../../../src/core/persona/tools.js';
import { PROVIDER_VOICES, REALTIME_PROVIDERS } from '../../../src/core/persona/providers.js';
import { PersonaSettingsFileSchema } from '../../../schemas/persona-settings-file.js';

const variants: ReadonlyArray<{ name: string; options: Parameters<typeof renderPersona>[1] }> = [
  { name: 'read-only', options: {} },
  { name: 'write tools enabled', options: { allowWriteTools: true } },
  { name: 'cross-lingual', options: { crossLingual: true } },
  { name: 'override naming every known tool', options: { overrideText: `Be brief. ${KNOWN_TOOL_NAMES.map((name) => `Use ${name} often.`).join(' ')} Stay kind.` } },
  { name: 'override naming every known tool, writes on', options: { overrideText: KNOWN_TOOL_NAMES.map((name) => `Try \`${name}\`.`).join('\n'), allowWriteTools: true } },
  { name: 'operator file narrowing and renaming', options: { toolsFile: { personas: { mars: { tools: ['get_page'] }, venus: { tools: ['query', 'get_page'] } }, tools: { get_page: { name: 'brain_page' } } } } },
  { name: 'operator file emptying the set', options: { toolsFile: { personas: { mars: { tools: [] }, venus: { tools: [] } } } } },
];

const promptOf = (rendered: ReturnType<typeof renderPersona>) => rendered.sections.map((section) => section.text).join('\n');

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
      for (const options of [{ allowWriteTools: true }, { crossLingual: true }]) {
        const rendered = renderPersona(persona, options);
        for (const section of rendered.sections) expect(section.text, `${persona.key}/${section.kind}`).toMatch(/^[\u0000-\u007f]*$/);
        for (const tool of rendered.tools) expect(tool.description).toMatch(/^[\u0000-\u007f]*$/);
      }
    }
    for (const rule of sharedHardRules()) expect(rule).toMatch(/^[\u0000-\u007f]*$/);
    for (const persona of PERSONAS) expect(persona.staleNote).toMatch(/^[\u0000-\u007f]+$/);
  });

  it("holds the rules a real call relies on, as hard rules of both personas that yield only to the persona's character", () => {
    const topics = [/connection, the audio, delays or any other technical problem/, /only the operator ends the call: never say goodbye/, /after a silence check in once/, /answer promptly/];
    for (const persona of PERSONAS) {
      for (const options of [{}, { overrideText: 'Be brief and kind.' }, { crossLingual: true }]) {
        const rules = renderPersona(persona, options).sections.find((section) => section.kind === 'hard-rules')!.text;
        for (const topic of topics) expect(rules, `${persona.key}: ${topic}`).toMatch(topic);
        for (const rule of CALL_RULES) expect(rules).toContain(`. ${rule}\n`.replace(/\n$/, ''));
      }
    }
    for (const rule of CALL_RULES) expect(rule.startsWith('Unless your character says otherwise')).toBe(true);
  });

  it('has venus say plainly, without a live context, that she cannot see the calendar or tasks, and each persona say what a stale one hides', () => {
    const tools = renderPersona(VENUS).sections.find((section) => section.kind === 'tools')!.text;
    expect(tools).toContain('When you have no live context, you cannot see them right now: say so plainly');
    expect(tools).not.toContain('Use the live context first');
    expect(VENUS.staleNote).toContain("you cannot see the operator's calendar, tasks or messages as they are now");
    expect(MARS.staleNote).toContain("you cannot see the operator's newest notes right now");
  });
});

describe('mars, as the product defines it', () => {
  const prompt = promptOf(renderPersona(MARS));

  it('holds every rule of its persona definition', () => {
    // The Iron Law, with its redirect to Venus.
    expect(prompt).toContain('The Iron Law: you are not the assistant.');
    expect(prompt).toContain(`"${VENUS_TERRITORY}"`);
    expect(VENUS_TERRITORY).toBe("That's Venus territory. What's on your mind?");
    // Solo and demo mode, detected in the session, each with its tool posture.
    expect(prompt).toContain('You start in solo mode');
    expect(prompt).toMatch(/Switch to demo mode when you hear more than one voice[^\n]*"this is my AI"[^\n]*"show them what you can do"/);
    expect(prompt).toContain('In solo mode, use tools sparingly');
    expect(prompt).toContain('- Use search or get_page when the operator asks you to recall');
    expect(prompt).toContain('- Use read_article when the operator shares a link');
    expect(prompt).toContain('In demo mode, use tools eagerly');
    expect(prompt).toContain('look them up at once with search or query');
    // Spoken output only; English with the short note.
    expect(prompt).toContain('answer out loud, in audio, every time. Never reply with text only');
    expect(prompt).toContain(`say briefly: "${ENGLISH_ONLY}"`);
    expect(ENGLISH_ONLY).toBe("I'm running English-only right now.");
    // Privacy: never recite the live context, never name family or therapists.
    expect(prompt).toContain('Never recite it or read it back');
    expect(prompt).toContain("Never name the operator's family members or therapists");
    // Saving.
    expect(prompt).toContain(`say: "${CANNOT_SAVE}"`);
    expect(CANNOT_SAVE).toBe("I can't save from voice; tell me again when you're at your screen.");
  });

  it('is between 1 KB and 8 KB, and free of email, phone, SSN, JWT and bearer shapes, real names and paths', () => {
    for (const options of [{}, { crossLingual: true }, { allowWriteTools: true }]) {
      const bytes = Buffer.byteLength(promptOf(renderPersona(MARS, options)));
      expect(bytes).toBeGreaterThanOrEqual(1024);
      expect(bytes).toBeLessThanOrEqual(8192);
    }
    const shapes: Array<[string, RegExp]> = [
      ['email', /[\w.+-]+@[\w-]+\.[\w.]+/],
      ['phone', /\+?\d[\d\s().-]{7,}\d/],
      ['ssn', /\b\d{3}-\d{2}-\d{4}\b/],
      ['jwt', /\beyJ[\w-]+\.[\w-]+\.[\w-]+/],
      ['bearer', /\bbearer\s+[\w.~+/-]{8,}/i],
      ['path', /(?:\/(?:home|users|etc|var|opt)\/|[A-Z]:\\|~\/)/i],
    ];
    for (const persona of PERSONAS) {
      const text = promptOf(renderPersona(persona, { allowWriteTools: true }));
      for (const [name, shape] of shapes) expect(text, `${persona.key}: ${name}`).not.toMatch(shape);
      for (const name of ['Jordan', 'Priya', 'Sam', 'Northwind', 'Alex']) expect(text, persona.key).not.toContain(name);
    }
  });

  it('never offers a calendar, task, email or write tool, even with write tools enabled', () => {
    for (const options of [{}, { allowWriteTools: true }, { allowWriteTools: true, toolsFile: { personas: { mars: { tools: [...TOOL_NAMES] } } } }]) {
      const names = renderPersona(MARS, options).tools.map((tool) => tool.name);
      expect(names.every((name) => !/calendar|task|mail|message|reminder/.test(name))).toBe(true);
      expect(names.some((name) => (WRITE_TOOL_NAMES as readonly string[]).includes(name))).toBe(false);
    }
    expect(renderPersona(MARS).tools.map((tool) => tool.name)).toEqual(['search', 'query', 'get_page', 'read_article']);
  });

  it('answers in the language spoken to only when cross-lingual replies are configured', () => {
    const cross = promptOf(renderPersona(MARS, { crossLingual: true }));
    expect(cross).not.toContain(ENGLISH_ONLY);
    expect(cross).toContain('Answer in the language you are spoken to');
    expect(prompt).not.toContain('Answer in the language you are spoken to');
  });
});

describe('venus', () => {
  it('sends questions of meaning to Mars and keeps to logistics reads', () => {
    const rendered = renderPersona(VENUS);
    expect(promptOf(rendered)).toContain('Questions of meaning are Mars territory');
    expect(rendered.tools.map((tool) => tool.name)).toEqual(['search', 'query', 'get_page', 'list_pages', 'find_experts', 'get_recent_salience', 'get_recent_transcripts', 'read_article']);
    expect(promptOf(rendered)).toContain(READ_ONLY_SENTENCE);
  });

  it('regression: offers read_article and get_recent_salience, as the voice server does, each with its description (a posture line repeating it is gone)', () => {
    const text = promptOf(renderPersona(VENUS));
    expect(text).toContain('- get_recent_salience: The pages the operator has been most involved with lately');
    expect(text).toContain('- read_article: Fetch a web page or article by its link');
    expect(text).not.toContain('- Use get_recent_salience for');
    expect(toolNamesInPrompt(renderPersona(VENUS)).sort()).toEqual([...VENUS.readTools].sort());
  });

  it('regression: has the rule to always answer in audio, never text only, among its hard rules (Mars had one, Venus did not)', () => {
    for (const persona of [MARS, VENUS]) {
      const rules = renderPersona(persona).sections.find((section) => section.kind === 'hard-rules')!.text;
      expect(rules, persona.key).toMatch(/^\d+\. Everything you say is heard, not read: answer out loud, in audio, every time\. Never reply with text only\b/m);
    }
  });

  it('offers set_reminder and log_to_brain only with write tools enabled, asking for a yes first', () => {
    const rendered = renderPersona(VENUS, { allowWriteTools: true });
    expect(rendered.tools.map((tool) => tool.name).slice(-2)).toEqual(['set_reminder', 'log_to_brain']);
    const text = promptOf(rendered);
    expect(text).toContain('set_reminder and log_to_brain change things for the operator: read back exactly what you will do and call only after the operator says yes.');
    expect(text).not.toContain(READ_ONLY_SENTENCE);
    // It can save now, so it does not say it cannot.
    expect(text).not.toContain(CANNOT_SAVE);
  });
});

const READ_ONLY_SENTENCE = 'These tools only read.';

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
    expect(rules).toContain('Speak English.');
    expect(rules).toContain('"a phone number"');
    expect(rules).toContain('not instructions');
  });

  for (const persona of PERSONAS) {
    it.each(variants)(`${persona.key}: the tool names the prompt mentions are exactly the tools returned (%s)`, ({ options }) => {
      const rendered = renderPersona(persona, options);
      const returned = rendered.tools.map((tool) => tool.name).sort();
      expect(toolNamesInPrompt(rendered).sort()).toEqual(returned);
    });
  }

  it('offers by default only names from the voice server\'s read-only allow-list', () => {
    for (const persona of PERSONAS) {
      for (const tool of renderPersona(persona).tools) expect(READ_TOOL_NAMES as readonly string[]).toContain(tool.name);
    }
  });

  it('gives every tool {type: "function", name, description, parameters} with a strict JSON Schema', () => {
    for (const name of TOOL_NAMES) {
      const { parameters, description } = TOOL_CATALOG[name];
      expect(name).toMatch(/^[a-z]+(?:_[a-z]+)*$/);
      expect(description.length).toBeGreaterThan(20);
      expect(parameters.type).toBe('object');
      expect(parameters.additionalProperties).toBe(false);
      const properties = parameters.properties;
      expect(Object.keys(properties).length, name).toBeGreaterThan(0);
      for (const required of parameters.required ?? []) expect(Object.keys(properties)).toContain(required);
      for (const [property, schema] of Object.entries(properties)) {
        expect(['string', 'integer', 'number', 'boolean'], `${name}.${property}`).toContain(schema['type']);
        expect(typeof schema['description'], `${name}.${property}`).toBe('string');
        if (schema['type'] === 'string') expect(schema['maxLength'] ?? schema['enum'] ?? schema['format'] ?? schema['pattern'], `${name}.${property} is bounded`).toBeDefined();
        if (schema['type'] === 'integer') expect([schema['minimum'], schema['maximum']], `${name}.${property} is bounded`).not.toContain(undefined);
        if (schema['pattern'] !== undefined) expect(() => new RegExp(schema['pattern'] as string, 'u')).not.toThrow();
      }
    }
    for (const tool of renderPersona(VENUS, { allowWriteTools: true }).tools) {
      expect(Object.keys(tool)).toEqual(['type', 'name', 'description', 'parameters']);
      expect(tool.type).toBe('function');
    }
  });

  it('hands out copies, so a caller cannot change the catalogue', () => {
    const [tool] = renderPersona(MARS).tools;
    (tool!.parameters.properties as Record<string, unknown>)['query'] = { type: 'number' };
    expect(renderPersona(MARS).tools[0]!.parameters.properties['query']).toMatchObject({ type: 'string' });
  });

  it('is deterministic', () => {
    expect(renderPersona(VENUS, { overrideText: 'x' })).toEqual(renderPersona(VENUS, { overrideText: 'x' }));
  });
});

describe('operator tools file (personas/tools.json)', () => {
  const file = (value: ToolsFile) => ({ toolsFile: value });

  it('narrows a persona\'s set, keeping the prompt to the tools left', () => {
    const rendered = renderPersona(MARS, file({ personas: { mars: { tools: ['search', 'read_article'] } } }));
    expect(rendered.tools.map((tool) => tool.name)).toEqual(['search', 'read_article']);
    const text = promptOf(rendered);
    expect(text).toContain('- Use search when the operator asks you to recall');
    expect(text).toContain('look them up at once with search and say');
    // A posture line whose only tool is gone is left out whole.
    expect(text).not.toContain('pull up the page of someone');
    expect(rendered.sections[2]!.source).toBe('personas/tools.json');
    expect(rendered.warnings).toEqual([]);
  });

  it('renames a tool to what the dispatcher calls it, in the tool list and the prompt alike', () => {
    const rendered = renderPersona(MARS, file({ tools: { search: { name: 'brain_search' }, read_article: { name: 'fetch-url' } } }));
    expect(rendered.tools.map((tool) => tool.name)).toEqual(['brain_search', 'query', 'get_page', 'fetch-url']);
    const text = promptOf(rendered);
    expect(text).toContain('Tools you can call: brain_search, query, get_page, fetch-url.');
    expect(text).toContain('- Use brain_search or get_page when');
    expect(mentionedToolNames(text, [...KNOWN_TOOL_NAMES, 'brain_search', 'fetch-url']).sort()).toEqual(['brain_search', 'fetch-url', 'get_page', 'query']);
    expect(rendered.tools[0]!.parameters).toEqual(TOOL_CATALOG.search.parameters);
  });

  it('rewords a description, cleaned to one line and scrubbed', () => {
    const rendered = renderPersona(VENUS, file({ tools: { get_page: { description: 'Open a page of the\nwiki. Ask ops@example.org if it fails.' } } }));
    const tool = rendered.tools.find((candidate) => candidate.name === 'get_page')!;
    expect(tool.description).toBe('Open a page of the wiki. Ask [email] if it fails.');
    expect(promptOf(rendered)).toContain('- get_page: Open a page of the wiki. Ask [email] if it fails.');
    expect(rendered.redactions).toEqual({ email: 1, phone: 0 });
  });

  it('leaves out refused, unknown and clashing entries, each with a warning', () => {
    const rendered = renderPersona(
      VENUS,
      file({
        personas: { venus: { tools: ['search', 'put_page', 'submit_job', 'file_upload', 'get_calendar', 'search', 'set_reminder'] } },
        tools: { search: { name: 'get_page' }, query: { name: 'put_page' }, delete_page: { description: 'x' }, nope: { name: 'x' } },
      }),
    );
    expect(rendered.tools.map((tool) => tool.name)).toEqual(['search']);
    expect(rendered.warnings).toEqual([
      'personas/tools.json: personas.venus.tools: put_page writes pages; a voice session never offers it',
      'personas/tools.json: personas.venus.tools: submit_job runs jobs; a voice session never offers it',
      'personas/tools.json: personas.venus.tools: file_upload uploads files; a voice session never offers it',
      'personas/tools.json: personas.venus.tools: get_calendar is not a tool the voice server dispatches; left out',
      'personas/tools.json: personas.venus.tools: set_reminder changes things and needs VOICE_WRITE_TOOLS=true; left out',
      'personas/tools.json: tools.search.name: "get_page" is the name of another tool; kept search',
      'personas/tools.json: tools.delete_page: writes pages; never offered; ignored',
      'personas/tools.json: tools.nope: not a tool the voice server dispatches; ignored',
    ]);
    expect(toolNamesInPrompt(rendered)).toEqual(['search']);
  });

  it('treats names that are properties of every object (constructor, toString) as unknown tools', () => {
    const rendered = renderPersona(VENUS, file({ personas: { venus: { tools: ['constructor', 'toString', 'search'] } }, tools: { search: { name: 'hasOwnProperty' } } }));
    expect(rendered.tools.map((tool) => tool.name)).toEqual(['hasOwnProperty']);
    expect(rendered.warnings.slice(0, 2)).toEqual([
      'personas/tools.json: personas.venus.tools: constructor is not a tool the voice server dispatches; left out',
      'personas/tools.json: personas.venus.tools: toString is not a tool the voice server dispatches; left out',
    ]);
  });

  it('offers a write-shaped tool only with the configuration opt-in, and refuses page writes even then', () => {
    const wants: ToolsFile = { personas: { venus: { tools: ['get_page', 'set_reminder', 'enrich_request', 'put_page'] } } };
    const off = renderPersona(VENUS, { toolsFile: wants });
    expect(off.tools.map((tool) => tool.name)).toEqual(['get_page']);
    const on = renderPersona(VENUS, { toolsFile: wants, allowWriteTools: true });
    expect(on.tools.map((tool) => tool.name)).toEqual(['get_page', 'set_reminder', 'enrich_request']);
    expect(on.warnings).toEqual(['personas/tools.json: personas.venus.tools: put_page writes pages; a voice session never offers it']);
    const mars = renderPersona(MARS, { toolsFile: { personas: { mars: { tools: ['search', 'log_to_brain'] } } }, allowWriteTools: true });
    expect(mars.tools.map((tool) => tool.name)).toEqual(['search']);
    expect(mars.warnings).toEqual(['personas/tools.json: personas.mars.tools: log_to_brain changes things, and mars never offers tools that do; left out']);
  });

  it('with every tool removed, says so and names none', () => {
    const rendered = renderPersona(MARS, file({ personas: { mars: { tools: [] } } }));
    expect(rendered.tools).toEqual([]);
    expect(rendered.sections[2]!.text).toContain('You have no tools in this session');
    expect(toolNamesInPrompt(rendered)).toEqual([]);
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

  it('regression: a sentence naming a tool that does not exist is dropped cleanly, with a warning (was "Use the an unavailable tool tool")', () => {
    const rendered = renderPersona(MARS, {
      overrideText: 'Be brief. Use the get_calendar tool to check dates. Stay warm.\n- Use `read_article` for links.\n- Use `send_email` when asked.\nKeep `calm`.',
    });
    expect(rendered.sections[1]!.text).toBe('Be brief. Stay warm.\n- Use read_article for links.\nKeep `calm`.');
    expect(rendered.sections[1]!.text).not.toContain('unavailable');
    expect(rendered.warnings).toEqual(['personas/mars.md: names tools this persona does not offer (get_calendar, send_email); those sentences were left out']);
    expect(toolNamesInPrompt(rendered).sort()).toEqual(rendered.tools.map((tool) => tool.name).sort());
  });

  it('writes a tool the operator renamed by the name the session offers', () => {
    const rendered = renderPersona(MARS, { overrideText: 'Reach for `search` first, then get_page.', toolsFile: { tools: { search: { name: 'brain_search' } } } });
    expect(rendered.sections[1]!.text).toBe('Reach for brain_search first, then get_page.');
  });

  it('falls back to the built-in character for an empty or binary override, or one left empty', () => {
    for (const overrideText of ['', ' \n <!-- only a comment --> \n', '\u0000\u0001\u0002binary', 'Use the put_page tool.']) {
      const rendered = renderPersona(VENUS, { overrideText });
      expect(rendered.overridden).toBe(false);
      expect(rendered.sections[1]!.source).toBe('builtin:venus/character');
      expect(rendered.warnings.at(-1)).toMatch(/^personas\/venus\.md: /);
    }
  });

  it('removes control and bidi characters from the override', () => {
    const rendered = renderPersona(VENUS, { overrideText: 'Be brief.\u0007 Stay\u202e calm\u2028 and kind.' });
    expect(rendered.sections[1]!.text).toBe('Be brief. Stay calm and kind.');
  });
});

describe('resolveToolReferences', () => {
  const names = new Map([
    ['search', 'search'],
    ['get_page', 'brain_page'],
    ['brain_page', 'brain_page'],
  ]);

  it('keeps prose, paths, file names and addresses that only look like snake_case', () => {
    const text = 'Read notes/daily_log.md and my_notes.txt; mail first_last@example.org. A plain search is fine.';
    expect(resolveToolReferences(text, names)).toEqual({ text, unknown: [] });
  });

  it('resolves known names, drops the sentences with unknown ones, and keeps list markers', () => {
    expect(resolveToolReferences('1. Try `get_page`! Then run_job. Done?\n\n- only `shell` here', names)).toEqual({
      text: '1. Try brain_page! Done?',
      unknown: ['run_job', 'shell'],
    });
  });
});

describe('voices', () => {
  it('are the persona defaults (OpenAI ash and coral, Gemini Orus and Aoede), each on its provider list', () => {
    expect(MARS.voices).toEqual({ openai: 'ash', gemini: 'Orus' });
    expect(VENUS.voices).toEqual({ openai: 'coral', gemini: 'Aoede' });
    for (const persona of PERSONAS) for (const provider of REALTIME_PROVIDERS) expect(PROVIDER_VOICES[provider]).toContain(persona.voices[provider]);
  });

  it('follow personas/settings.json per persona and provider, and keep the default for whatever it leaves out', () => {
    const settingsFile = { personas: { venus: { voice: { openai: 'marin' } }, mars: { voice: { gemini: 'Puck' } } } };
    expect(renderPersona(VENUS, { settingsFile }).voices).toEqual({ openai: 'marin', gemini: 'Aoede' });
    expect(renderPersona(MARS, { settingsFile }).voices).toEqual({ openai: 'ash', gemini: 'Puck' });
    expect(renderPersona(MARS).voices).toBe(MARS.voices);
    // A voice is not prompt text: the sections are the same whatever the file says.
    expect(renderPersona(VENUS, { settingsFile }).sections).toEqual(renderPersona(VENUS).sections);
  });

  it('are validated against the provider\'s list by the settings file schema', () => {
    expect(PersonaSettingsFileSchema.safeParse({ personas: { mars: { voice: { openai: 'cedar', gemini: 'Zephyr' } } } }).success).toBe(true);
    for (const bad of [{ personas: { mars: { voice: { openai: 'Orus' } } } }, { personas: { mars: { voice: { gemini: 'ash' } } } }, { personas: { mars: { voice: { azure: 'ash' } } } }, { personas: { pluto: {} } }]) {
      expect(PersonaSettingsFileSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false);
    }
  });
});
