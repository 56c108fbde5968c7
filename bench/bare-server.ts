import Fastify from 'fastify';

// The benchmark's yardsticks: Fastify with no plugins and no logging, and two kinds of route.
// `GET /` returns a constant; `GET /same/:name` returns the very bytes a route of the
// service answered (registered by the harness after its preflight with `PUT /same/:name`),
// the HTTP ceiling for that payload. Route throughput is reported as a ratio to these on the
// same machine and run.
const port = Number(process.argv[2] ?? 0);
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

await app.listen({ port, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : port}\n`);
process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
