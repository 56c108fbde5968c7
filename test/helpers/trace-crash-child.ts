/**
 * Run by test/io/trace-store-crash.test.ts as `node --import tsx trace-crash-child.ts <dir>`:
 * 32 concurrent appenders write to a trace store until the parent SIGKILLs the process.
 * A run id is printed only after its append resolved, so every printed id must survive.
 */
import { pino } from 'pino';
import { createFileTraceStore as createTraceStore } from '../../src/io/trace/index.js';
import { deliveredEvent } from './trace-events.js';

const dir = process.argv[2];
if (!dir) throw new Error('usage: trace-crash-child.ts <trace dir>');

// Small files, so the kill also lands around rotations.
const store = createTraceStore(dir, pino({ level: 'silent' }), { retentionMs: 86_400_000, rotateBytes: 256 * 1024 });
let next = 0;

async function appender(worker: number): Promise<void> {
  for (;;) {
    const runId = `crash-${worker}-${next++}`;
    await store.append(deliveredEvent(runId, { volatile: `### live\n${'x'.repeat(200 + (next % 300))}\n` }));
    process.stdout.write(`${runId}\n`);
  }
}

process.stdout.write('ready\n');
await Promise.all(Array.from({ length: 32 }, (_, worker) => appender(worker)));
