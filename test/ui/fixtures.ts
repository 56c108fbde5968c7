import { appendFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { compile } from '../../src/core/compile.js';
import { DEFAULT_POLICY } from '../../src/core/policy.js';
import type { SourceText } from '../../src/core/types.js';
import type { BrainSession } from '../../src/io/brain.js';
import { compiledEventFields, type TraceEventInput } from '../../src/io/trace/index.js';

/** Lines a hostile brain could hold: markup that must reach the page as text, never as HTML. */
export const SCRIPT_LINE = '<script>window.__ccPwned = "script"</script>';
export const IMG_LINE = '<img src="x" onerror="window.__ccPwned = \'img\'; alert(1)">';

/**
 * Writes brain files that exercise the viewer: a worker identity just short of the
 * providers' 1,024-token cache minimum and a channel purpose that takes the prefix over
 * it (so one boundary is flagged and the next is not), markup in a trusted and in an
 * advisory block, and an email address the scrubber must redact.
 */
export async function prepareBrain(brainRoot: string): Promise<void> {
  const paragraph =
    'When Alex shares a rough draft, you keep the argument and the order of ideas, cut filler, and prefer ' +
    'concrete verbs. You flag any sentence whose claim you cannot check, rather than smoothing it over. ';
  await appendFile(join(brainRoot, 'workers/scribe/identity.md'), `\n${Array.from({ length: 13 }, () => paragraph).join('\n\n')}\n`);
  await appendFile(
    join(brainRoot, 'channels/general/purpose.md'),
    '\nIn this channel Alex thinks out loud: answer briefly, offer one alternative wording when asked, and keep ' +
      'drafts in the thread rather than starting new ones. Long answers belong in a document, not in chat; say so ' +
      'and offer to start one. Questions about dates, names or numbers get a source or an honest "I do not know". ' +
      'Keep the tone warm and plain.\n' +
      `${SCRIPT_LINE}\n`,
  );
  await writeFile(
    join(brainRoot, 'topics/launch.md'),
    `# Topic: launch\n\nSummary: the launch post. Reviewer: jordan.lee@example.com\n\n- ${SCRIPT_LINE}\n- ${IMG_LINE}\n`,
  );
}

async function brainText(session: BrainSession, path: string): Promise<SourceText> {
  const result = await session.read(path, { maxBytes: 64 * 1024 });
  if (result.status !== 'ok') throw new Error(`${path}: ${result.status}`);
  return { source: path, text: result.text, brainDerived: true };
}

/**
 * Traces one compile the way the deliver path does: brain files read through
 * `app.brain`, the real compiler, and the event appended to `app.traces`.
 */
export async function traceCompile(app: FastifyInstance, runId: string, at = new Date()): Promise<TraceEventInput> {
  const session = app.brain.session();
  const identity = await brainText(session, 'workers/scribe/identity.md');
  const purpose = await brainText(session, 'channels/general/purpose.md');
  const topic = await brainText(session, 'topics/launch.md');
  // As POST /compile does: the worker's memory listed, and an optional file looked for that is absent.
  await session.list('workers/scribe/memory');
  await session.read('channels/drafts/purpose.md');
  const compiled = compile({
    subject: { kind: 'worker', id: 'scribe' },
    surface: 'chat',
    phase: 'start',
    policy: { ...DEFAULT_POLICY, limitChars: 16_000 },
    clock: { now: at, timeZone: 'Europe/London' },
    identity,
    purpose,
    topic,
    task: { source: 'request:task', text: 'Draft the launch post from the topic notes.' },
  });
  const event: TraceEventInput = {
    runId,
    at: at.toISOString(),
    route: 'POST /compile',
    subject: { kind: 'worker', id: 'scribe' },
    surface: 'chat',
    status: 200,
    outcome: 'delivered',
    request: { worker: 'scribe', channelId: 'general', phase: 'start' },
    ...compiledEventFields(compiled),
    warnings: [...compiled.warnings, 'topic "launch" is a fixture'],
    sources: [...session.sources()],
    absent: session.absent().map((path) => ({ path })),
    listings: [...session.listings()],
    timing: { readMs: 0.3, compileMs: 0.2 },
  };
  await app.traces.append(event);
  return event;
}

/** A compile that failed: no prompt, an error, the status delivered. */
export async function traceFailure(app: FastifyInstance, runId: string, at = new Date()): Promise<TraceEventInput> {
  const event: TraceEventInput = {
    runId,
    at: at.toISOString(),
    route: 'GET /context/mars',
    subject: { kind: 'persona', id: 'mars' },
    surface: 'voice',
    status: 422,
    outcome: 'failed',
    request: { topicId: 'real-estate' },
    error: { code: 'CC_BUDGET_EXCEEDED', status: 422, detail: 'The topic block is 9000 chars; its limit is 6000.' },
  };
  await app.traces.append(event);
  return event;
}
