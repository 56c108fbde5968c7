/**
 * The process that holds a connection burst (see `forkBurst` in ./connection-burst.ts): the
 * sockets are opened here, not in the process that times the probes, so opening thousands of
 * them cannot delay a probe's answer on the prober's own event loop.
 *
 * Messages: it reads its shape from argv, sends `{ type: 'opened' }` once every connect was
 * issued, answers `{ type: 'status' }` with its status, and ends the burst and exits on
 * `{ type: 'end' }` or when its parent goes away.
 */
import { openBurst, type BurstShape } from './connection-burst.js';

const [port, shapeJson] = process.argv.slice(2);
const burst = openBurst(Number(port), JSON.parse(shapeJson ?? '{}') as BurstShape);
process.send?.({ type: 'opened' });

function end(): void {
  burst.end();
  process.disconnect?.();
}

process.on('message', (message: { type?: string }) => {
  if (message.type === 'status') {
    process.send?.({ type: 'status', sockets: burst.sockets.length, connectMs: burst.connectMs, openMs: burst.openMs, closed: burst.closed(), probes: burst.probes });
  } else if (message.type === 'end') end();
});
process.once('disconnect', () => {
  burst.end();
});
