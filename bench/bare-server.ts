import Fastify from 'fastify';
import { lstatSync } from 'node:fs';
import { createDurableLog } from './durable-log.js';

// The benchmark's yardsticks: Fastify with no plugins and no logging, and three kinds of route.
// `GET /` returns a constant; `GET /same/:name` returns the very bytes a route of the
// service answered (registered by the harness after its preflight with `PUT /same/:name`),
// the HTTP ceiling for that payload; `GET /durable/:name` returns the same bytes after what
// the service promises before it answers ("the durable same-body route"): the
// `lstat`s of the brain paths the answer relied on, on the event loop as the service makes
// them on a local disk, and one hash-chained line of the trace event's size appended with
// group commit (`PUT /durable/:name` registers both). Route throughput is reported as a
// ratio to these on the same machine and run.
const port = Number(process.argv[2] ?? 0);
const durableDir = process.argv[3];
const log = durableDir === undefined ? null : await createDurableLog(durableDir);
const app = Fastify({ logger: false, bodyLimit: 16 * 1024 * 1024 });
const reply = { status: 'ok', service: 'bare' };
app.get('/', async () => reply);

interface Body {
  bytes: Buffer;
  type: string;
  encoding: string | undefined;
}
const bodies = new Map<string, Body>();
app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
app.put<{ Params: { name: string }; Body: Buffer }>('/same/:name', async (request, response) => {
  const type = request.headers['x-serve-content-type'];
  const encoding = request.headers['x-serve-content-encoding'];
  bodies.set(request.params.name, {
    bytes: request.body,
    type: typeof type === 'string' ? type : 'application/json; charset=utf-8',
    encoding: typeof encoding === 'string' ? encoding : undefined,
  });
  return response.code(204).send();
});
app.get<{ Params: { name: string } }>('/same/:name', (request, response) => {
  const body = bodies.get(request.params.name);
  if (body === undefined) return response.code(404).send();
  response.type(body.type);
  if (body.encoding !== undefined) response.header('content-encoding', body.encoding);
  return response.send(body.bytes);
});

interface Durable {
  paths: string[];
  eventBytes: number;
}
const durables = new Map<string, Durable>();
app.put<{ Params: { name: string }; Body: Durable }>('/durable/:name', async (request, response) => {
  const { paths, eventBytes } = request.body;
  if (log === null || !Array.isArray(paths) || !Number.isInteger(eventBytes) || eventBytes < 1) return response.code(400).send();
  durables.set(request.params.name, { paths: paths.map(String), eventBytes });
  return response.code(204).send();
});
app.get<{ Params: { name: string } }>('/durable/:name', async (request, response) => {
  const body = bodies.get(request.params.name);
  const durable = durables.get(request.params.name);
  if (body === undefined || durable === undefined || log === null) return response.code(404).send();
  for (const path of durable.paths) lstatSync(path, { throwIfNoEntry: false });
  await log.append(durable.eventBytes);
  response.type(body.type);
  if (body.encoding !== undefined) response.header('content-encoding', body.encoding);
  return response.send(body.bytes);
});

await app.listen({ port, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
process.once('SIGTERM', () => void app.close().then(() => log?.close()).then(() => process.exit(0)));
