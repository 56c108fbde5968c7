import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { PROJECT_ROOT } from '../src/config.js';
import { ProblemError } from '../src/errors.js';
import { ifNoneMatchHits } from '../src/http/conditional.js';
import { notModified, problems, type DocumentedHeader } from '../src/http/openapi.js';

/** Where `npm run build` (scripts/build-ui.mjs) puts the viewer. */
export const UI_DIR = resolve(PROJECT_ROOT, 'dist/ui');

const HTML = 'text/html; charset=utf-8';
const JS = 'text/javascript; charset=utf-8';
const CSS = 'text/css; charset=utf-8';

/**
 * Every file of the viewer and its content type; nothing else under `/ui/` is served, so
 * no request path ever reaches the file system. One `.js` per module in `ui/src/`.
 */
export const UI_FILES: Readonly<Record<string, string>> = Object.freeze({
  'index.html': HTML,
  'styles.css': CSS,
  'main.js': JS,
  'api.js': JS,
  'dom.js': JS,
  'model.js': JS,
  'views.js': JS,
  'compare.js': JS,
  'compare-view.js': JS,
  'run-view.js': JS,
  'event-view.js': JS,
  'prompt-view.js': JS,
  'text-diff.js': JS,
});

/** No inline script or style, no other origin; the page only talks to this service's JSON API. */
export const UI_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const UI_HEADERS = {
  'content-security-policy': UI_CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const UiFileParamsSchema = z.object({ file: z.string().max(64).meta({ examples: ['main.js'] }) });

const STATIC_HEADERS: Record<string, DocumentedHeader> = {
  'Content-Security-Policy': { type: 'string', description: 'no inline script or style, no other origin' },
  ETag: { type: 'string' },
};
const text = z.string();

export interface UiRoutesOptions {
  /** The built viewer; defaults to `dist/ui` under the project root. */
  dir?: string;
}

interface UiFile {
  body: Buffer;
  etag: string;
}

/**
 * `GET /ui/` and `GET /ui/:file`: the trace viewer's static files (public: they hold no
 * data; the page asks the JSON API, with a token, for everything it shows).
 */
export const uiRoutes: FastifyPluginAsyncZod<UiRoutesOptions> = async (app, options) => {
  const dir = options.dir ?? UI_DIR;
  // Read once on first use: the bundle is part of the build, not of the request path.
  const files = new Map<string, Promise<UiFile>>();
  const load = (name: string): Promise<UiFile> => {
    let file = files.get(name);
    if (!file) {
      file = readFile(join(dir, name)).then((body) => ({ body, etag: `"${createHash('sha256').update(body).digest('hex').slice(0, 32)}"` }));
      // A failed read (not built yet) is retried on the next request.
      file.catch(() => files.delete(name));
      files.set(name, file);
    }
    return file;
  };

  async function send(name: string, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const type = Object.hasOwn(UI_FILES, name) ? UI_FILES[name] : undefined;
    if (type === undefined) throw new ProblemError('CC_NOT_FOUND', `The viewer has no file ${JSON.stringify(name)}.`);
    let file: UiFile;
    try {
      file = await load(name);
    } catch (error) {
      throw new ProblemError('CC_NOT_READY', 'The trace viewer is not built: run `npm run build`.', { cause: error });
    }
    reply.header('etag', file.etag).header('cache-control', 'no-cache');
    if (ifNoneMatchHits(request.headers['if-none-match'], file.etag)) return reply.code(304).send();
    return reply.type(type).send(file.body);
  }

  app.addHook('onSend', async (_request, reply, payload) => {
    reply.headers(UI_HEADERS);
    return payload;
  });

  app.get(
    '/ui',
    {
      config: { public: true },
      schema: {
        operationId: 'redirectToViewer',
        summary: 'Redirects to the trace viewer at /ui/',
        response: {
          308: z.undefined().meta({ description: 'to `ui/` (relative, so it also works behind a path prefix)' }),
        },
      },
    },
    async (_request, reply) => reply.redirect('ui/', 308),
  );
  app.get(
    '/ui/',
    {
      config: { public: true },
      schema: {
        operationId: 'getViewer',
        summary: 'The trace viewer (docs/ui.md), a static page that reads GET /runs and GET /runs/{runId}/trace',
        description: `Public: the page holds no data. It calls the JSON API itself, with the bearer token the
person enters (kept in sessionStorage). Served with a strict Content-Security-Policy
(no inline script or style, no other origin), \`X-Content-Type-Options: nosniff\` and
\`Referrer-Policy: no-referrer\`; \`ETag\` with \`If-None-Match\` answers 304.`,
        response: {
          200: { description: 'index.html', headers: STATIC_HEADERS, content: { 'text/html': { schema: text } } },
          ...notModified,
          ...problems(503),
        },
      },
    },
    async (request, reply) => send('index.html', request, reply),
  );
  app.get(
    '/ui/:file',
    {
      config: { public: true },
      schema: {
        operationId: 'getViewerFile',
        summary: 'One static file of the trace viewer (its scripts and style sheet)',
        description: 'Only the files of the built viewer are served (a fixed list); anything else is a 404 problem.',
        params: UiFileParamsSchema,
        response: {
          200: {
            description: 'the file',
            headers: STATIC_HEADERS,
            content: { 'text/javascript': { schema: text }, 'text/css': { schema: text }, 'text/html': { schema: text } },
          },
          ...notModified,
          ...problems(400, 404, 503),
        },
      },
    },
    async (request, reply) => send(request.params.file, request, reply),
  );
};
