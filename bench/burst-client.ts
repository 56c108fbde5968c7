/**
 * The process that holds a connection burst (see `forkBurst` in ./connection-burst.ts): the
 * sockets are opened here, not in the process that times the probes, so opening thousands of
 * them cannot delay a probe's answer on the prober's own event loop.
 *
 * Messages: it reads its shape from argv and sends `{ type: 'ready' }`; on `{ type: 'open' }`
 * it opens the burst and sends `{ type: 'opened' }` once every connect was issued; it
 * answers `{ type: 'status' }` with its status; on `{ type: 'end' }`, or when its parent
 * goes away, it closes every socket and exits.
 */
import { openBurst, type Burst, type BurstShape } from './connection-burst.js';

const [port, shapeJson] = process.argv.slice(2);
const shape = JSON.parse(shapeJson ?? '{}') as BurstShape;
let burst: Burst | undefined;

process.on('message', (message: { type?: string }) => {
  if (message.type === 'open' && burst === undefined) {
    burst = openBurst(Number(port), shape);
    // net.connect issues the connect itself on the next tick: every SYN has left by the check phase.
    setImmediate(() => process.send?.({ type: 'opened' }));
  } else if (message.type === 'status') {
    process.send?.({ type: 'status', sockets: burst?.sockets.length ?? 0, connectMs: burst?.connectMs ?? [], closed: burst?.closed() ?? 0 });
  } else if (message.type === 'end') {
    burst?.end();
    process.disconnect?.();
  }
});
process.once('disconnect', () => burst?.end());
process.send?.({ type: 'ready' });
