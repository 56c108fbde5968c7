import { z } from 'zod';

/** At most this many services in `workers/<worker>/connections.json`. */
export const MAX_SERVICES = 32;
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

// A host name (optionally `*.` for its subdomains, optionally a port): lowercase labels.
const HOST_PATTERN = /^(\*\.)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:[0-9]{1,5})?$/;

const unique = <T>(items: readonly T[]) => new Set(items).size === items.length;

/** One service a worker can act on through its tools. */
export const ConnectionSchema = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, 'must be a lowercase name of 1-64 [a-z0-9_.-]'),
  hosts: z
    .array(z.string().max(253).regex(HOST_PATTERN, 'must be a lowercase host name such as api.example.com (optionally *. and :port)'))
    .min(1)
    .max(16)
    .refine(unique, 'hosts must be unique'),
  methods: z.array(z.enum(HTTP_METHODS)).min(1).max(HTTP_METHODS.length).refine(unique, 'methods must be unique'),
  // The stand-in variable its tools carry: a name, never a value, so a pasted token fails here.
  env: z.string().regex(/^[A-Z][A-Z0-9_]{0,63}$/, 'must be an environment variable name such as GITHUB_TOKEN (never its value)'),
  usage: z.string().min(1).max(500).optional(),
});

/**
 * `workers/<worker>/connections.json`: the services a worker can act on, as an array of
 * `{name, hosts, methods, env, usage?}`. A file that fails this schema gives no connections
 * block and a warning naming the file and the first problem.
 */
export const ConnectionsFileSchema = z
  .array(ConnectionSchema)
  .max(MAX_SERVICES)
  .refine((services) => unique(services.map((service) => service.name)), 'service names must be unique');
