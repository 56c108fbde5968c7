/**
 * A voice server as its developer runs it, for test/client/voice-server.test.ts: the code of
 * examples/connect.ts (the README's) in a process of its own, connecting one call per
 * IPC message, with CONTEXT_COMPILER_URL and REALTIME_CALLS_URL pointing at the test's
 * servers. It reports each connect — how long until the session was handed to the realtime
 * endpoint (the example's fetch), how long the whole connect took, what the endpoint
 * answered, what it logged to stderr — and the timers still keeping it alive right after. Nothing here catches more
 * than a real voice server would: a throw from our client is a failed connect, a crash an exit.
 */
import { connect } from '../../examples/connect.js';

interface Call {
  id: number;
  persona: string;
  topicId?: string;
}

// When the example sends its session: the moment it has one in hand.
let sentAt = Number.NaN;
const send = globalThis.fetch;
globalThis.fetch = (...args: Parameters<typeof fetch>) => {
  sentAt = performance.now();
  return send(...args);
};

// What the example's onFallback logged during the call (calls come one at a time): the test
// tells by it whether a call fell back on the budget (`timeout`) or on what the service answered.
let logged: string[] = [];
const writeStderr = process.stderr.write.bind(process.stderr);
process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
  logged.push(...String(chunk).split('\n').filter((line) => line !== ''));
  return (writeStderr as (...args: unknown[]) => boolean)(chunk, ...rest);
}) as typeof process.stderr.write;

process.on('message', (call: Call) => {
  const started = performance.now();
  sentAt = Number.NaN;
  logged = [];
  connect('v=0 test offer', call.persona, call.topicId).then(
    (answer) => reply(call, started, { ok: true, answer }),
    (error: unknown) => reply(call, started, { ok: false, error: String(error) }),
  );
});

function reply(call: Call, started: number, outcome: Record<string, unknown>): void {
  const ms = performance.now() - started;
  const timers = process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
  process.send!({ id: call.id, ms, sessionMs: sentAt - started, timers, logged, ...outcome });
}

process.send!({ ready: true });
