/**
 * The OpenAPI contract, generated from the same zod schemas the routes validate and answer
 * with (`@fastify/swagger` with `fastify-type-provider-zod`'s transforms). `openapi.yaml` is
 * what `npm run openapi` writes from it, and `GET /openapi.json` serves the same document.
 * What a route schema cannot say by itself is stated here once: which routes are public,
 * the problem catalogue (from `src/errors.ts`), the headers of a delivery, and that a route
 * answering 304 takes `If-None-Match`.
 */
import swagger, { type SwaggerTransform } from '@fastify/swagger';
import type { FastifyInstance, FastifySchema } from 'fastify';
import fp from 'fastify-plugin';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { Document, isScalar, isSeq, visit } from 'yaml';
import { z } from 'zod';
import { CATALOG, type ErrorCode } from '../errors.js';
import { SERVICE_VERSION } from '../version.js';
import { ProblemSchema } from '../../schemas/problem.js';
import { problemType } from './problem.js';

const CODES = Object.keys(CATALOG) as ErrorCode[];

/** The problem body with its catalogue: every `code` and `type` the service writes, by status. */
export const DocumentedProblemSchema = ProblemSchema.extend({
  type: z.enum(CODES.map(problemType) as [string, ...string[]]).meta({ description: '`urn:context-compiler:problem:<code>`, one per code' }),
  code: z.enum(CODES).meta({
    description: `Stable error code. The catalogue (src/errors.ts):\n\n${CODES.map((code) => `- \`${code}\` (${CATALOG[code].status}): ${CATALOG[code].title}`).join('\n')}`,
  }),
}).meta({
  id: 'Problem',
  description:
    'An RFC 9457 problem (`application/problem+json`). 5xx details are generic; the log has the rest. Validation problems list every field in `errors`.',
});

/** A response header's schema, for the document only (Fastify ignores `headers` beside `content`). */
export interface DocumentedHeader {
  type: 'string' | 'integer';
  description?: string;
}

const runIdHeader: DocumentedHeader = { type: 'string', description: 'the run this answer was traced under' };

/** A problem answer for `status`, its description naming the codes the catalogue has for it. */
export function problemResponse(status: number, description?: string, headers?: Record<string, DocumentedHeader>) {
  const codes = CODES.filter((code) => CATALOG[code].status === status).map((code) => `\`${code}\``);
  return {
    description: description ?? `An RFC 9457 problem: ${codes.join(', ')}`,
    ...(headers ? { headers } : {}),
    content: { 'application/problem+json': { schema: DocumentedProblemSchema } },
  };
}

/** The problem answers a route may give, by status. */
export function problems(...statuses: number[]): Record<number, ReturnType<typeof problemResponse>> {
  return Object.fromEntries(statuses.map((status) => [status, problemResponse(status)]));
}

/** A JSON answer, described. */
export function json<T extends z.ZodType>(schema: T, description: string, headers?: Record<string, DocumentedHeader>) {
  return { description, ...(headers ? { headers } : {}), content: { 'application/json': { schema } } };
}

/** `304 Not Modified`: the `If-None-Match` given already holds this representation. */
export const notModified = {
  304: z.undefined().meta({ description: 'the prompts are unchanged since the ETag given in If-None-Match' }),
};

/** A compile delivery's 200: JSON (`schema`) or the instructions as text (`?format=text`), with its headers. */
export function delivered<T extends z.ZodType>(schema: T, description: string) {
  return {
    description,
    headers: {
      ETag: {
        type: 'string',
        description:
          'strong validator of this representation: the prompts (text: the instructions alone) and, in JSON, the cache plan (its route key carries `engine`), the budget, voice and tools, receipts and, with `?hud=1`, the HUD',
      },
      'x-run-id': runIdHeader,
      'Server-Timing': { type: 'string', description: '`read`, `compile` and `trace` (time to a durable trace event) durations in ms' },
    } satisfies Record<string, DocumentedHeader>,
    content: {
      'application/json': { schema },
      'text/plain': { schema: z.string().meta({ description: '`?format=text`: just the instructions' }) },
    },
  };
}

/** The 503 of a delivery whose trace event could not be made durable. */
export const traceUnavailable = {
  503: problemResponse(
    503,
    '`CC_TRACE_UNAVAILABLE`: the trace event could not be made durable (disk full, directory unwritable), so nothing of the prompt was delivered; the detail says whether the compile itself had failed. `/readyz` is 503 meanwhile and the service recovers by itself. Also `CC_SHUTTING_DOWN`, `CC_OVERLOADED`, `CC_NOT_READY`.',
    {
      'Retry-After': { type: 'integer', description: 'seconds' },
      'x-run-id': { type: 'string', description: 'the run the failure was traced under; absent on `CC_OVERLOADED` and `CC_SHUTTING_DOWN`, refused before any compile' },
    },
  ),
};

/** The 503 any route but the probes and /metrics may give. */
const overloaded = problemResponse(
  503,
  '`CC_OVERLOADED`: the replica is over a load-shedding threshold (PRESSURE_*), so it refused at once; retry after `Retry-After` (another replica may answer). Also `CC_SHUTTING_DOWN`.',
  { 'Retry-After': { type: 'integer', description: 'seconds' } },
);

/** The 403 of the DNS-rebinding guard, which any route may give (src/http/host-guard.ts). */
const hostRefused = problemResponse(
  403,
  '`CC_HOST_NOT_ALLOWED`: the `Host` header names neither a loopback host nor one of ALLOWED_HOSTS (checked without tokens, or with tokens when ALLOWED_HOSTS is set). `CC_ORIGIN_NOT_ALLOWED`: without tokens, the `Origin` header names another origin than this service.',
);

const DESCRIPTION = `Compiles the exact prompt an AI persona or worker is given from a read-only markdown
brain: deterministic, traced, cache-aware. Every error is an RFC 9457
\`application/problem+json\` body with a stable \`code\` (components/schemas/Problem lists them).

While the service shuts down (SIGTERM), a request that arrives on a connection still open
(pipelined behind one in flight) is answered on every route with a 503 problem,
\`code: CC_SHUTTING_DOWN\`, \`Retry-After: 1\` and \`Connection: close\`: send it again, and
another instance answers. Connections are capped (MAX_CONNECTIONS): at the cap the oldest
connection that has not sent a complete request is closed to admit a new one.

An overloaded replica (mean event-loop delay, event-loop utilisation or heap in use over its
PRESSURE_* threshold) answers every route but the probes and /metrics at once with a 503
problem, \`code: CC_OVERLOADED\` and \`Retry-After\`, and /readyz is 503 naming the
threshold, until a sample is under every threshold again.

Without tokens (loopback only), every route answers only requests whose \`Host\` is a
loopback name (\`localhost\`, \`127.0.0.1\`, \`[::1]\`, any port) or one of ALLOWED_HOSTS, and
whose \`Origin\`, when sent, is this service's own: anything else is a 403 problem naming
the header (DNS rebinding).

Every answer carries \`x-request-id\` (but the 400, 408 and 431 written to the socket before
a request exists): the caller's own when it sent a safe id
(\`[A-Za-z0-9_:-]\`, at most 128 characters), else one the service made; problems repeat it
as \`requestId\`. A valid W3C \`traceparent\` is recorded with the run (an invalid one is
ignored), so the caller's trace and the run can be joined; with OTEL_EXPORTER_OTLP_ENDPOINT
set, each compile is also a span, a child of that \`traceparent\`. Every answer also carries
\`x-context-compiler-version\`, this service's release, which the client checks against the
major version it was built for.

Generated from the route schemas (\`npm run openapi\`); do not edit by hand.`;

type Transformed = { schema: FastifySchema & Record<string, unknown>; url: string };

/**
 * The type provider's transform (zod → JSON Schema, registered ids → components), plus what
 * the route schema does not carry itself: `security: []` on public routes, the response
 * headers the provider leaves out, and `If-None-Match` wherever a 304 is documented.
 */
function routeTransform(): SwaggerTransform {
  const zodTransform = createJsonSchemaTransform({ skipList: [] }) as unknown as SwaggerTransform;
  return (input) => {
    // Every route but the exempt ones may be shed while the replica is overloaded (src/http/pressure.ts).
    const schema = input.schema as (FastifySchema & { response?: Record<string, unknown> }) | undefined;
    if (schema?.response && input.route.config?.overloadExempt !== true && schema.response['503'] === undefined) {
      input = { ...input, schema: { ...schema, response: { ...schema.response, 503: overloaded } } } as typeof input;
    }
    // Every route may refuse a foreign Host or Origin (src/http/host-guard.ts).
    const guarded = input.schema as (FastifySchema & { response?: Record<string, unknown> }) | undefined;
    if (guarded?.response && guarded.response['403'] === undefined) {
      input = { ...input, schema: { ...guarded, response: { ...guarded.response, 403: hostRefused } } } as typeof input;
    }
    const out = zodTransform(input) as Transformed;
    out.schema ??= {};
    const response = (input.schema as { response?: Record<string, { headers?: Record<string, DocumentedHeader> }> } | undefined)?.response ?? {};
    const transformed = out.schema.response as Record<string, Record<string, unknown>> | undefined;
    for (const [status, entry] of Object.entries(response)) {
      if (entry?.headers && transformed?.[status]) transformed[status]['headers'] = entry.headers;
    }
    if (transformed?.['304'] && out.schema.headers === undefined) {
      out.schema.headers = {
        type: 'object',
        properties: { 'If-None-Match': { type: 'string', description: 'an ETag from an earlier answer: an unchanged answer is a 304 without a body' } },
      };
    }
    if (input.route.config?.public === true) out.schema.security = [];
    return out;
  };
}

/** `app.swagger()` with the document-wide parts; registered before the routes so it sees them all. */
export const openapiPlugin = fp(
  async function openapiPlugin(app: FastifyInstance) {
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: { title: 'context-compiler', version: SERVICE_VERSION, description: DESCRIPTION },
        security: [{ bearer: [] }],
        components: {
          securitySchemes: {
            bearer: {
              type: 'http',
              scheme: 'bearer',
              description:
                'One of CONTEXT_COMPILER_TOKENS (`name:token`: trace events record the name, never the token). Not required when no token is configured (loopback only).',
            },
          },
        },
      },
      transform: routeTransform(),
      transformObject: createJsonSchemaTransformObject({}),
    });
  },
  { name: 'openapi' },
);

const PROBLEM_PREFIX = 'An RFC 9457 problem: ';
const SAFE_INTEGER_BOUNDS: ReadonlySet<number> = new Set([Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]);

type Json = Record<string, unknown>;

/** Every object in `value`, depth first (the document is a tree: JSON from the generator). */
function* objects(value: unknown): Generator<Json> {
  if (Array.isArray(value)) for (const item of value) yield* objects(item);
  else if (value !== null && typeof value === 'object') {
    yield value as Json;
    for (const child of Object.values(value)) yield* objects(child);
  }
}

function refsIn(value: unknown): string[] {
  return [...JSON.stringify(value).matchAll(/"#\/components\/schemas\/([^"]+)"/g)].map((match) => match[1]!);
}

/**
 * The contract as an object, tidied for people: zod's safe-integer bounds dropped, request
 * copies of named schemas merged with their answer copies when equal, the problem answers
 * named once under `components/responses`, components sorted by name.
 */
export function openapiDocument(app: FastifyInstance): Json {
  const generated = structuredClone(app.swagger()) as unknown as Json & { paths: Json; components: { schemas: Record<string, Json> } & Json };
  for (const node of objects(generated)) {
    if (node['type'] !== 'integer') continue;
    for (const bound of ['minimum', 'maximum']) if (SAFE_INTEGER_BOUNDS.has(node[bound] as number)) delete node[bound];
  }
  const schemas = generated.components.schemas;
  const rename = new Map<string, string>();
  for (const name of Object.keys(schemas)) {
    if (!name.endsWith('Input')) continue;
    const base = name.slice(0, -'Input'.length);
    if (!(base in schemas) || JSON.stringify(schemas[base]) === JSON.stringify(schemas[name])) rename.set(name, base);
  }
  let text = JSON.stringify({ paths: generated.paths, schemas });
  for (const [from, to] of rename) text = text.replaceAll(`"#/components/schemas/${from}"`, `"#/components/schemas/${to}"`);
  const renamed = JSON.parse(text) as { paths: Json; schemas: Record<string, Json> };
  for (const [from, to] of rename) {
    renamed.schemas[to] ??= renamed.schemas[from]!;
    delete renamed.schemas[from];
  }
  // The named schemas the paths refer to, and those they refer to in turn.
  const used = new Set(refsIn(renamed.paths));
  for (const name of used) for (const ref of refsIn(renamed.schemas[name])) used.add(ref);

  const responses: Record<string, Json> = {};
  for (const operations of Object.values(renamed.paths) as Json[]) {
    for (const operation of Object.values(operations) as Json[]) {
      const answers = operation['responses'] as Record<string, Json>;
      for (const [status, answer] of Object.entries(answers)) {
        if (typeof answer['description'] !== 'string' || !answer['description'].startsWith(PROBLEM_PREFIX) || answer['headers']) continue;
        responses[`Problem${status}`] = answer;
        answers[status] = { $ref: `#/components/responses/Problem${status}` };
      }
    }
  }
  const { paths: _paths, components, ...head } = generated;
  return {
    ...head,
    paths: renamed.paths,
    components: {
      ...components,
      responses: Object.fromEntries(Object.entries(responses).sort(([a], [b]) => (a < b ? -1 : 1))),
      schemas: Object.fromEntries([...used].sort().map((name) => [name, renamed.schemas[name]])),
    },
  };
}

/** `openapi.yaml`'s text: the document above, short lists of plain values written on one line. */
export function openapiYaml(app: FastifyInstance): string {
  const document = new Document(openapiDocument(app), { aliasDuplicateObjects: false });
  visit(document, {
    Seq(_key, node) {
      if (isSeq(node) && node.items.every((item) => isScalar(item) && String(item.value).length <= 40)) node.flow = true;
    },
  });
  return document.toString({ lineWidth: 0 });
}
