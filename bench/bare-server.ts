import Fastify from 'fastify';

// The benchmark's yardstick: Fastify with one route returning a constant, no plugins, no
// logging. Route throughput is reported as a ratio to this on the same machine and run.
const port = Number(process.argv[2] ?? 0);
const app = Fastify({ logger: false });
const reply = { status: 'ok', service: 'bare' };
app.get('/', async () => reply);

await app.listen({ port, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
