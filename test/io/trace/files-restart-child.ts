// A second process on a trace directory another one filled: run by files-restart.test.ts
// under a small heap cap. It lists, finds by request id, reads an old run, appends to a
// run a caller chose and sweeps, then prints what it held as one line of JSON.
import { pino } from 'pino';
import { createFileTraceStore } from '../../../src/io/trace/index.js';
import { deliveredEvent } from '../../helpers/trace-events.js';

const [dir, maxIndexBytes, requestId, oldRunId] = process.argv.slice(2) as [string, string, string, string];
const store = createFileTraceStore(dir, pino({ level: 'silent' }), { retentionMs: 7 * 86_400_000, maxIndexBytes: Number(maxIndexBytes), writerId: 'second-process' });
let peakHeap = 0;
let peakIndexBytes = 0;
let peakIndexedEvents = 0;
const sample = setInterval(() => {
  peakHeap = Math.max(peakHeap, process.memoryUsage().heapUsed);
  peakIndexBytes = Math.max(peakIndexBytes, store.stats().indexBytes);
  peakIndexedEvents = Math.max(peakIndexedEvents, store.stats().indexedEvents);
}, 5);
const listed = await store.listRuns({ limit: 5 });
const found = await store.listRuns({ requestId, limit: 100 });
const old = await store.readRun(oldRunId, { limit: 5 });
// A connect with a caller-chosen run id that already holds events: its owner and count are looked up first.
await store.append(deliveredEvent(oldRunId));
const swept = await store.sweep();
const after = await store.readRun(oldRunId, { limit: 100 });
clearInterval(sample);
const stats = store.stats();
await store.close();
process.stdout.write(
  `${JSON.stringify({
    listed: listed.runs.length,
    found: found.runs.length,
    oldEvents: old?.events.length ?? 0,
    afterEvents: after?.events.length ?? 0,
    deleted: swept.deleted,
    indexedEvents: stats.indexedEvents,
    indexBytes: stats.indexBytes,
    peakIndexBytes,
    peakIndexedEvents,
    peakHeap,
  })}\n`,
);
