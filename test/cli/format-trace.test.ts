import { describe, expect, it } from 'vitest';
import { formatTrace } from '../../src/cli/format-trace.js';
import type { RunTrace } from '../../schemas/trace.js';

const SHA = 'a'.repeat(64);

function trace(event: Partial<RunTrace['events'][number]>): RunTrace {
  return {
    runId: 'run-1',
    events: [
      {
        runId: 'run-1',
        at: '2026-11-30T17:20:00.000Z',
        route: 'GET /context/venus',
        subject: { kind: 'persona', id: 'venus' },
        status: 200,
        outcome: 'delivered',
        request: {},
        chars: 0,
        systemPrompt: null,
        inputPrompt: null,
        verified: null,
        chain: 'linked',
        ...event,
      },
    ],
    chain: { status: 'linked', problems: [], notes: [] },
    nextCursor: null,
  };
}

describe('formatTrace: source freshness', () => {
  it('prints listings and missing paths, and what ?verify=sources found of them', () => {
    const verified = formatTrace(
      trace({
        sources: [{ path: 'tasks/open.md', size: 10, mtimeMs: 1, sha256: SHA, changed: false, currentSha256: SHA }],
        listings: [
          { path: 'meetings', count: 3, sha256: SHA, names: ['a.md', 'b.md', 'c.md'], changed: true, currentCount: 3, currentSha256: SHA, added: ['d.md'], removed: ['a.md'] },
          { path: 'memory', count: 900, sha256: SHA, changed: true, currentCount: 901, currentSha256: SHA },
          { path: 'workers/scribe/memory', count: 1, sha256: SHA, names: ['x.md'], changed: false, currentCount: 1, currentSha256: SHA, added: [], removed: [] },
        ],
        absent: [
          { path: 'calendar/today.md', appeared: true },
          { path: 'personas/venus.md', appeared: false },
        ],
      }),
    );
    expect(verified).toContain('  source tasks/open.md (10 bytes, sha256 aaaaaaaaaaaa)  unchanged\n');
    expect(verified).toContain('  listed meetings/ (3 files, sha256 aaaaaaaaaaaa)  FILES CHANGED since: +d.md, -a.md\n');
    expect(verified).toContain('  listed memory/ (900 files, sha256 aaaaaaaaaaaa)  FILES CHANGED since: 901 now\n');
    expect(verified).toContain('  listed workers/scribe/memory/ (1 file, sha256 aaaaaaaaaaaa)  unchanged\n');
    expect(verified).toContain('  missing calendar/today.md  APPEARED since\n');
    expect(verified).toContain('  missing personas/venus.md  still missing\n');

    const plain = formatTrace(trace({ listings: [{ path: 'meetings', count: 3, sha256: SHA }], absent: [{ path: 'calendar/today.md' }] }));
    expect(plain).toContain('  listed meetings/ (3 files, sha256 aaaaaaaaaaaa)\n');
    expect(plain).toContain('  missing calendar/today.md\n');
  });
});

describe('formatTrace: what a persona answer gave beside the prompts', () => {
  it('prints the voice and the tools delivered, and says when their definitions cannot be read back', () => {
    const tools = [{ type: 'function' as const, name: 'search', description: 'Search.', parameters: {} }];
    const realtime = { voice: 'ash', toolNames: ['search', 'read_article'], toolsSha256: SHA };
    expect(formatTrace(trace({ realtime: { ...realtime, tools } }))).toContain('  realtime: voice ash, tools search, read_article (sha256 aaaaaaaaaaaa)\n');
    expect(formatTrace(trace({ realtime: { ...realtime, tools: null } }))).toContain('(sha256 aaaaaaaaaaaa, DEFINITIONS UNREADABLE)\n');
    expect(formatTrace(trace({}))).not.toContain('realtime');
  });

  it('says when the lean connect answer (view=session) was sent, and says nothing of the full one', () => {
    expect(formatTrace(trace({ request: { view: 'session', format: 'json' } }))).toContain('  answered the lean connect answer (view=session)\n');
    expect(formatTrace(trace({ request: { view: 'full', format: 'json' } }))).not.toContain('view=');
  });
});

describe('formatTrace: governed worker compiles', () => {
  it('prints the recall decision, the receipts and the HUD, or why the HUD was rejected', () => {
    const governed = formatTrace(
      trace({
        recall: { policy: 'clean-room', interactionContext: [], suppressed: true },
        receipts: {
          role: { id: 'editor', selectedBy: 'default', source: 'workers/courier/roles/editor.md', sha256: SHA },
          blueprint: { revision: '2026.11', source: 'platform/blueprint.md', sha256: SHA },
          experiences: [{ sourceRef: 'host:lesson/1', sha256: SHA }],
          preferences: { length: 'concise', initiative: 'ask-first' },
        },
        hud: { snapshotSha256: SHA, limitChars: 100, usedChars: 50, derived: [], files: [] },
      }),
    );
    expect(governed).toContain('  recall: SUPPRESSED (clean-room worker, clean run)\n');
    expect(governed).toContain(
      '  receipts: role editor (default, sha256 aaaaaaaaaaaa); blueprint 2026.11 (sha256 aaaaaaaaaaaa); 1 experience; preferences length concise, initiative ask-first\n',
    );
    expect(governed).toContain('  hud: 0 files looked for, 0 found, snapshot aaaaaaaaaaaaaaaa');

    const plain = formatTrace(
      trace({
        recall: { policy: 'clean-room', interactionContext: ['message', 'channelId'], suppressed: false },
        receipts: { role: null, blueprint: { revision: 'none', source: null, sha256: null }, experiences: [], preferences: {} },
        hudRejected: ['files[0] (x.md): inverted line range (9 > 3)'],
      }),
    );
    expect(plain).toContain('  recall: clean-room, interaction context: message, channelId\n');
    expect(plain).toContain('  receipts: role none; blueprint none; 0 experiences; preferences none\n');
    expect(plain).toContain('  HUD REJECTED: files[0] (x.md): inverted line range (9 > 3)\n');
  });
});

describe('formatTrace: what joins a run to the caller, and the cache plan it recorded', () => {
  it('prints the requestId and traceparent an event carries, and none when it carries neither', () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    expect(formatTrace(trace({ requestId: 'call-42', traceparent }))).toContain(`  requestId call-42  traceparent ${traceparent}\n`);
    expect(formatTrace(trace({ requestId: 'call-42' }))).toContain('  requestId call-42\n');
    const plain = formatTrace(trace({}));
    expect(plain).not.toContain('requestId');
    expect(plain).not.toContain('traceparent');
  });

  it('regression: names the minimum the plan recorded (minimumTokens), not a fixed 1,024', () => {
    const boundary = { class: 'worker-stable', afterBlock: 'identity', prefixChars: 4000, approxTokens: 1000, tokens: 980, belowMinimum: true, prefixSha256: SHA };
    const cache = { routeKey: 'cc1-abc', tokenizer: 'o200k_base', boundaries: [boundary] };
    expect(formatTrace(trace({ cache: { ...cache, minimumTokens: 2048 } }))).toContain(
      '    after identity (worker-stable): 4000 chars, 980 tokens  below the 2,048-token cache minimum\n',
    );
    // An event recorded without the figure says so rather than inventing one.
    expect(formatTrace(trace({ cache }))).toContain('980 tokens  below the cache minimum\n');
  });
});

describe('formatTrace: the input prompt, decoded', () => {
  const input = [
    JSON.stringify({ block: 'live-context', authority: 'advisory', source: 'builtin:venus/live-context', text: 'Live context (advisory): a snapshot.\nTasks:\n- [P1] Send the "digest" \\ today' }),
    JSON.stringify({ block: 'topic', authority: 'advisory', source: 'topics/garden.md', text: 'Topic: garden' }),
    'not a block line',
  ].join('\n');

  it('regression: prints each input line decoded, a block heading and its text a line each (it printed one escaped JSON line), under the event’s first line', () => {
    const text = formatTrace(trace({ systemPrompt: 'You are Venus.', inputPrompt: `${input}\n`, sources: [{ path: 'tasks/open.md', size: 10, mtimeMs: 1, sha256: SHA }] }));
    const lines = text.split('\n');
    const at = lines.findIndex((line) => line.startsWith('  input ('));
    expect(at).toBe(lines.findIndex((line) => line.startsWith('#1 ')) + 1);
    expect(lines.slice(at + 1, at + 8)).toEqual([
      '    [live-context] builtin:venus/live-context (advisory)',
      '      Live context (advisory): a snapshot.',
      '      Tasks:',
      '      - [P1] Send the "digest" \\ today',
      '    [topic] topics/garden.md (advisory)',
      '      Topic: garden',
      '    not a block line',
    ]);
    expect(text).not.toContain('{"block"');
    // --prompts adds the system prompt exactly, and does not print the input twice.
    const withPrompts = formatTrace(trace({ systemPrompt: 'You are Venus.', inputPrompt: `${input}\n` }), { prompts: true });
    expect(withPrompts).toContain('----- systemPrompt -----\nYou are Venus.\n----- inputPrompt: decoded under the event above (--json for its exact JSON lines) -----\n----- end -----\n');
    expect(withPrompts.split('Live context (advisory): a snapshot.')).toHaveLength(2);
  });
});
