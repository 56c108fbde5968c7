import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { readHead } from '../../../src/io/trace/files/event-head.js';
import { summarize } from '../../../src/io/trace/files/run-index.js';
import { createFileTraceStore } from '../../../src/io/trace/index.js';
import { tempDir } from '../../helpers/app.js';
import { deliveredEvent, failedEvent } from '../../helpers/trace-events.js';

/** The event lines a store writes for these events. */
async function writtenLines(events: Parameters<ReturnType<typeof createFileTraceStore>['append']>[0][]): Promise<Buffer[]> {
  const dir = await tempDir('cc-event-head-');
  const store = createFileTraceStore(dir, pino({ level: 'silent' }), { retentionMs: 86_400_000 });
  for (const event of events) await store.append(event);
  await store.close();
  const lines: Buffer[] = [];
  for (const name of (await readdir(dir)).sort()) {
    for (const line of (await readFile(join(dir, name), 'utf8')).split('\n')) if (line.startsWith('{"t":"event"')) lines.push(Buffer.from(line));
  }
  return lines;
}

/** What a whole parse gives of the fields a head holds. */
function parsedHead(line: Buffer) {
  const event = JSON.parse(line.toString('utf8')).event;
  const summary = summarize(event, event.chars ?? 0);
  const head: Record<string, unknown> = { runId: summary.runId, subject: summary.subject, status: summary.status, outcome: summary.outcome };
  for (const key of ['caller', 'requestId', 'traceparent'] as const) if (summary[key] !== undefined) head[key] = summary[key];
  return { atMs: Date.parse(summary.at), summary: head };
}

describe('an event line’s head, read without parsing the line', () => {
  it('gives what a whole parse gives of the fields a listing filters and orders by', async () => {
    const lines = await writtenLines([
      deliveredEvent('run-a', { requestId: 'req-1', traceparent: `00-${'a'.repeat(32)}-00f067aa0ba902b7-01`, caller: 'alice' }),
      failedEvent('run-b', { parentRunId: 'run-a', surface: 'voice', requestId: 'r'.repeat(129) }),
      deliveredEvent('run-c', { caller: 'bob', route: '/context/mars?x=ü', requestId: 'req-ü-€' }),
    ]);
    expect(lines).toHaveLength(3);
    for (const line of lines) expect(readHead(line)).toEqual(parsedHead(line));
  });

  it('leaves to a whole parse a line that does not start as the writer writes one', async () => {
    const [line] = await writtenLines([deliveredEvent('run-a', { requestId: 'req-1', caller: 'alice' })]);
    const text = line!.toString('utf8');
    const variants = [
      // An escape in a head field, a key out of order or twice, another type, a number JSON refuses.
      text.replace('"caller":"alice"', '"caller":"al\\u0069ce"'),
      text.replace('"runId":"run-a",', '').replace('"requestId":"req-1"', '"requestId":"req-1","runId":"run-a"'),
      text.replace('"status":200', '"status":200,"status":500'),
      text.replace('"caller":"alice"', '"caller":7'),
      text.replace('"status":200', '"status":0200'),
      text.replace('"subject":{"kind":"persona","id":"mars"}', '"subject":{"id":"mars","kind":"persona"}'),
      text.replace('{"t":"event","event":{', '{"t":"event", "event":{'),
      text.slice(0, text.indexOf('"status"')),
    ];
    for (const variant of variants) {
      expect(variant).not.toBe(text);
      expect(readHead(Buffer.from(variant))).toBeNull();
    }
    expect(readHead(line!)).not.toBeNull();
  });

  it('reads only the head: its time is linear in the head, whatever follows', async () => {
    const [line] = await writtenLines([deliveredEvent('run-a', { requestId: 'req-1' })]);
    // A line whose tail is not JSON still has a readable head; the listing reads the whole line again only for a run it shows.
    const cut = Buffer.concat([line!.subarray(0, line!.indexOf('"request":') + 10), Buffer.from('{{{{')]);
    expect(readHead(cut)).toEqual(readHead(line!));
  });
});
