import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { CallerConfigError, readCallers, type Caller } from './callers.js';
import { isValidTimeZone } from './core/zones.js';
import { parseAllowedHosts } from './http/host-guard.js';

/** The repository root, whether running from `src/` (tsx, vitest) or `dist/src/`. */
export const PROJECT_ROOT = resolveProjectRoot();
export const EXAMPLE_BRAIN = resolve(PROJECT_ROOT, 'examples/brain');

function resolveProjectRoot(): string {
  // src/config.ts runs from src/ under tsx and vitest, and from dist/src/ once built.
  const here = dirname(fileURLToPath(import.meta.url));
  return basename(dirname(here)) === 'dist' ? resolve(here, '../..') : resolve(here, '..');
}

const DURATION_UNITS: Record<string, number> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** Parses `500ms`, `30s`, `15m`, `12h`, `7d` into milliseconds. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+)\s*(ms|s|m|h|d)$/.exec(text.trim());
  if (!match) return undefined;
  return Number(match[1]) * DURATION_UNITS[match[2]!]!;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const integer = (min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, 'must be a whole number')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));

const duration = z.string().transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0) {
    ctx.addIssue({ code: 'custom', message: 'must be a duration such as 30s, 15m, 12h or 7d' });
    return z.NEVER;
  }
  return ms;
});

/** A duration a timer can hold (Node caps timers near 24.8 days, and a longer one fires at once). */
const timeout = (maxMs: number, maxText: string) => duration.refine((ms) => ms <= maxMs, `must be at most ${maxText}`);

// Re-exported so schemas and routes validate zones exactly as the compiler does.
export { isValidTimeZone };

const flag = z.enum(['true', 'false'], 'must be true or false').transform((value) => value === 'true');

/** `0` turns a load-shedding threshold off. */
const OFF = 0;

const pressureDelay = z.string().transform((value, ctx) => {
  if (value.trim() === '0') return OFF;
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0 || ms > 60_000) {
    ctx.addIssue({ code: 'custom', message: 'must be a duration such as 200ms or 1s (at most 60s), or 0 for off' });
    return z.NEVER;
  }
  return ms;
});

const pressureUtilization = z
  .string()
  .regex(/^(0|0?\.\d+|1(\.0+)?)$/, 'must be a fraction of the event loop such as 0.98 (above 0, at most 1), or 0 for off')
  .transform(Number);

/** Bytes, `auto` (null: a share of the V8 heap limit, found at start) or `0` for off. */
const pressureHeap = z.string().transform((value, ctx) => {
  const text = value.trim();
  if (text === 'auto') return null;
  const bytes = /^\d{1,15}$/.test(text) ? Number(text) : Number.NaN;
  if (bytes !== OFF && !(bytes >= 1024 * 1024)) {
    ctx.addIssue({ code: 'custom', message: 'must be a number of bytes (at least 1048576), auto, or 0 for off' });
    return z.NEVER;
  }
  return bytes;
});

// under-pressure measures the delay with a 10 ms timer and reads a sample that holds no
// measurement as an infinite delay: a sample must span several of them.
const sampleInterval = duration.refine((ms) => ms >= 100 && ms <= 60_000, 'must be between 100ms and 60s');

const timezone = z.string().refine((name) => isValidTimeZone(name), 'must be an IANA time zone such as UTC or Europe/London');

/**
 * Connections the kernel may complete before the process accepts them. Past it, Linux drops
 * a newcomer's SYN and the client sends it again a second later: Node's default (511) is
 * smaller than a reconnect burst; 4096 is the kernel's own default cap (`net.core.somaxconn`)
 * since Linux 5.4.
 */
const DEFAULT_LISTEN_BACKLOG = 4096;

/** The samplers `OTEL_TRACES_SAMPLER` names (the OpenTelemetry SDK environment specification's built-in ones). */
const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;

const otlpUrl = z
  .string()
  .trim()
  .refine((value) => URL.canParse(value) && /^https?:$/.test(new URL(value).protocol), 'must be an http:// or https:// URL such as http://otel-collector:4318');

const EnvSchema = z.object({
  PORT: integer(0, 65535).default(8080),
  HOST: z.string().min(1).default('127.0.0.1'),
  BRAIN_ROOT: z.string().min(1).optional(),
  BRAIN_REVALIDATE: z.enum(['auto', 'sync', 'async'], 'must be auto, sync or async').default('auto'),
  BRAIN_LISTING_MAX_ENTRIES: integer(100, 1_000_000).default(10_000),
  TRACE_DIR: z.string().min(1).default('./var/traces'),
  TRACE_RETENTION: duration.default(7 * 86_400_000),
  CONTEXT_COMPILER_TOKENS: z.string().optional(),
  CONTEXT_COMPILER_TOKENS_FILE: z.string().min(1).optional(),
  CONTEXT_COMPILER_READ_ALL: z.string().optional(),
  ALLOWED_HOSTS: z
    .string()
    .optional()
    .transform((value, ctx) => {
      const parsed = parseAllowedHosts(value ?? '');
      if ('hosts' in parsed) return parsed.hosts;
      ctx.addIssue({ code: 'custom', message: `${JSON.stringify(parsed.invalid)} is not a host name: give names such as api.example.com or 10.0.0.5, comma-separated, without ports` });
      return z.NEVER;
    }),
  TRACE_SIGNING_KEY: z.string().optional(),
  TRACE_SIGNING_KEY_FILE: z.string().min(1).optional(),
  // Checked after the parse by readDatabaseUrl, which never repeats the value (it holds a password).
  TRACE_DATABASE_URL: z.string().optional(),
  TRACE_DATABASE_URL_FILE: z.string().min(1).optional(),
  RATE_LIMIT_MAX: integer(1, 100_000_000).default(600),
  RATE_LIMIT_WINDOW: z
    .string()
    .default('1 minute')
    .refine((value) => parseRateWindow(value) !== undefined, 'must be a window such as "1 minute", 60s or 60000')
    .transform((value) => parseRateWindow(value)!),
  BODY_LIMIT: integer(1024, 64 * 1024 * 1024).default(262_144),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  DEFAULT_TIMEZONE: timezone.default('UTC'),
  PROMPT_LIMIT_CHARS: integer(1000, 2_000_000).default(48_000),
  SHUTDOWN_GRACE: timeout(3_600_000, '1h').default(10_000),
  MAX_CONNECTIONS: integer(2, 1_000_000).default(768),
  LISTEN_BACKLOG: integer(1, 65_535).default(DEFAULT_LISTEN_BACKLOG),
  HEADERS_TIMEOUT: timeout(3_600_000, '1h').default(10_000),
  REQUEST_TIMEOUT: timeout(3_600_000, '1h').default(30_000),
  KEEP_ALIVE_TIMEOUT: timeout(3_600_000, '1h').default(5_000),
  PRESSURE_MAX_EVENT_LOOP_DELAY: pressureDelay.default(200),
  PRESSURE_MAX_EVENT_LOOP_UTILIZATION: pressureUtilization.default(OFF),
  PRESSURE_MAX_HEAP_USED: pressureHeap.default(null),
  PRESSURE_SAMPLE_INTERVAL: sampleInterval.default(1000),
  VOICE_WRITE_TOOLS: flag.default(false),
  VOICE_CROSS_LINGUAL: flag.default(false),
  WORKERS: integer(1, 64).default(1),
  // OpenTelemetry's own variables, as every OTLP SDK reads them (docs/operations.md, "Tracing").
  OTEL_SDK_DISABLED: z.enum(['true', 'false'], 'must be true or false').default('false'),
  OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl.optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpUrl.optional(),
  OTEL_SERVICE_NAME: z.string().trim().min(1).max(256).default('context-compiler'),
  OTEL_TRACES_SAMPLER: z.enum(SAMPLERS, `must be one of ${SAMPLERS.join(', ')}`).default('parentbased_always_on'),
  OTEL_TRACES_SAMPLER_ARG: z
    .string()
    .regex(/^(0|1|0?\.\d+|1\.0+)$/, 'must be a ratio between 0 and 1 such as 0.25')
    .transform(Number)
    .default(1),
});

/** Every environment variable the service reads: docs/configuration.md documents each. */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(EnvSchema.shape);

/** Accepts what @fastify/rate-limit accepts for `timeWindow`: ms, or "N unit(s)". */
function parseRateWindow(text: string): number | undefined {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) > 0 ? Number(trimmed) : undefined;
  const spoken = /^(\d+)\s*(millisecond|second|minute|hour|day)s?$/.exec(trimmed);
  if (spoken) {
    const unit = { millisecond: 1, second: 1000, minute: 60_000, hour: 3_600_000, day: 86_400_000 }[spoken[2]!]!;
    return Number(spoken[1]) * unit || undefined;
  }
  return parseDuration(trimmed);
}

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly brainRoot: string;
  /** How cached brain reads are revalidated: `lstat`s on the event loop, through the thread pool, or `auto` (see `RevalidationMode`). */
  readonly brainRevalidate: 'auto' | 'sync' | 'async';
  /** Files (and subdirectories) one brain listing keeps: past it, the last by name. */
  readonly brainListingMaxEntries: number;
  readonly traceDir: string;
  readonly traceRetentionMs: number;
  /** HMAC key for trace chains (TRACE_SIGNING_KEY or its file); null for plain SHA-256 chains. */
  readonly traceSigningKey: string | null;
  /**
   * The PostgreSQL trace backend (TRACE_DATABASE_URL or its file); null for trace files
   * under `traceDir`. Holds a password: never log it or put it in a message.
   */
  readonly traceDatabaseUrl: string | null;
  /** One per configured bearer token, with the name trace events record (never the token). Empty: no authentication (loopback only). */
  readonly callers: readonly Caller[];
  /**
   * Host names served besides the loopback ones (`ALLOWED_HOSTS`): without tokens, requests
   * naming another `Host` are refused (DNS rebinding); with tokens, only when this is set.
   */
  readonly allowedHosts: readonly string[];
  readonly rateLimit: { readonly max: number; readonly windowMs: number };
  readonly bodyLimit: number;
  readonly logLevel: (typeof LOG_LEVELS)[number];
  readonly defaultTimezone: string;
  readonly promptLimitChars: number;
  readonly shutdownGraceMs: number;
  /** Sockets open at once; at the cap the oldest one without a request in flight is closed for a newcomer. */
  readonly maxConnections: number;
  /** The listen backlog: connections the kernel queues until they are accepted (capped by `net.core.somaxconn`). */
  readonly listenBacklog: number;
  /** A new socket must send a complete request head within this; later heads, within this of their first byte. */
  readonly headersTimeoutMs: number;
  /** A whole request (head and body) must arrive within this; also the longest a request in flight may be silent. */
  readonly requestTimeoutMs: number;
  /** How long a socket may wait, idle, for its next request. */
  readonly keepAliveTimeoutMs: number;
  /** Load shedding (`@fastify/under-pressure`): over any threshold, requests get a 503 `CC_OVERLOADED` and `/readyz` says not ready. */
  readonly pressure: PressureLimits;
  /** Voice personas may offer write-shaped tools (`set_reminder`, `log_to_brain`, `enrich_request`). */
  readonly voiceWriteTools: boolean;
  /** Voice personas reply in the language spoken to instead of English only. */
  readonly voiceCrossLingual: boolean;
  /** Processes serving the port (node:cluster): a primary and this many workers when above 1, each with its own caches and trace writer. */
  readonly workers: number;
  /** OpenTelemetry spans of the compile routes, exported over OTLP/HTTP; null (the default) when no endpoint is set. */
  readonly telemetry: TelemetryConfig | null;
}

export interface TelemetryConfig {
  /** Where spans are posted: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` as given, else `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`. */
  readonly tracesUrl: string;
  readonly serviceName: string;
  readonly sampler: (typeof SAMPLERS)[number];
  /** The ratio of the `traceidratio` samplers (`OTEL_TRACES_SAMPLER_ARG`). */
  readonly samplerRatio: number;
}

/** The load-shedding thresholds; 0 turns one off. */
export interface PressureLimits {
  /** Mean event-loop delay over a sample, in ms. */
  readonly maxEventLoopDelayMs: number;
  /** Event-loop utilisation over a sample (0..1). */
  readonly maxEventLoopUtilization: number;
  /** V8 heap in use, in bytes; null for `auto` (a share of the heap limit, found at start). */
  readonly maxHeapUsedBytes: number | null;
  /** How often the process is sampled, in ms. */
  readonly sampleIntervalMs: number;
}

/**
 * After SHUTDOWN_GRACE has closed the connections still in flight, how long the trace store
 * gets to make its last batch durable before the process gives up and exits 1.
 */
export const SHUTDOWN_FLUSH_MS = 5_000;

/**
 * File descriptors the process needs besides its sockets (node itself, brain reads, trace
 * files): the open-files limit should be at least MAX_CONNECTIONS plus this.
 */
export const DESCRIPTORS_BESIDES_SOCKETS = 128;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/**
 * Parses the environment once at boot. Every problem names the variable that caused it;
 * the result is frozen so nothing downstream can drift from what was validated.
 */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const present = Object.fromEntries(
    Object.entries(env).filter(([key, value]) => key in EnvSchema.shape && value !== undefined && value !== ''),
  );
  const parsed = EnvSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => {
      const variable = String(issue.path[0] ?? 'environment');
      return `${variable}: ${issue.message} (got ${JSON.stringify(env[variable] ?? '')})`;
    });
    throw new ConfigError(`invalid configuration\n  ${lines.join('\n  ')}`);
  }
  const vars = parsed.data;
  if (vars.HEADERS_TIMEOUT > vars.REQUEST_TIMEOUT) {
    throw new ConfigError(
      `invalid configuration\n  HEADERS_TIMEOUT: must not be longer than REQUEST_TIMEOUT (${vars.REQUEST_TIMEOUT} ms) (got ${JSON.stringify(env['HEADERS_TIMEOUT'] ?? '')})`,
    );
  }
  let callers: Caller[];
  try {
    callers = readCallers(vars.CONTEXT_COMPILER_TOKENS, vars.CONTEXT_COMPILER_TOKENS_FILE, vars.CONTEXT_COMPILER_READ_ALL);
  } catch (error) {
    if (error instanceof CallerConfigError) throw new ConfigError(error.message);
    throw error;
  }
  const traceSigningKey = readSigningKey(vars.TRACE_SIGNING_KEY, vars.TRACE_SIGNING_KEY_FILE);
  const traceDatabaseUrl = readDatabaseUrl(vars.TRACE_DATABASE_URL, vars.TRACE_DATABASE_URL_FILE);
  if (callers.length === 0 && !isLoopback(vars.HOST)) {
    throw new ConfigError(
      `HOST=${vars.HOST} would expose the service without authentication; ` +
        'set CONTEXT_COMPILER_TOKENS (or CONTEXT_COMPILER_TOKENS_FILE), or bind HOST to a loopback address',
    );
  }
  return Object.freeze({
    port: vars.PORT,
    host: vars.HOST,
    brainRoot: resolve(vars.BRAIN_ROOT ?? EXAMPLE_BRAIN),
    brainRevalidate: vars.BRAIN_REVALIDATE,
    brainListingMaxEntries: vars.BRAIN_LISTING_MAX_ENTRIES,
    traceDir: resolve(vars.TRACE_DIR),
    traceRetentionMs: vars.TRACE_RETENTION,
    traceSigningKey,
    traceDatabaseUrl,
    callers: Object.freeze(callers),
    allowedHosts: Object.freeze(vars.ALLOWED_HOSTS ?? []),
    rateLimit: Object.freeze({ max: vars.RATE_LIMIT_MAX, windowMs: vars.RATE_LIMIT_WINDOW }),
    bodyLimit: vars.BODY_LIMIT,
    logLevel: vars.LOG_LEVEL,
    defaultTimezone: vars.DEFAULT_TIMEZONE,
    promptLimitChars: vars.PROMPT_LIMIT_CHARS,
    shutdownGraceMs: vars.SHUTDOWN_GRACE,
    maxConnections: vars.MAX_CONNECTIONS,
    listenBacklog: vars.LISTEN_BACKLOG,
    headersTimeoutMs: vars.HEADERS_TIMEOUT,
    requestTimeoutMs: vars.REQUEST_TIMEOUT,
    keepAliveTimeoutMs: vars.KEEP_ALIVE_TIMEOUT,
    pressure: Object.freeze({
      maxEventLoopDelayMs: vars.PRESSURE_MAX_EVENT_LOOP_DELAY,
      maxEventLoopUtilization: vars.PRESSURE_MAX_EVENT_LOOP_UTILIZATION,
      maxHeapUsedBytes: vars.PRESSURE_MAX_HEAP_USED,
      sampleIntervalMs: vars.PRESSURE_SAMPLE_INTERVAL,
    }),
    voiceWriteTools: vars.VOICE_WRITE_TOOLS,
    voiceCrossLingual: vars.VOICE_CROSS_LINGUAL,
    workers: vars.WORKERS,
    telemetry: readTelemetry(vars),
  });
}

/** The OTLP traces URL and how spans are sampled; null when off (no endpoint, or `OTEL_SDK_DISABLED=true`). */
function readTelemetry(vars: z.infer<typeof EnvSchema>): TelemetryConfig | null {
  const base = vars.OTEL_EXPORTER_OTLP_ENDPOINT;
  const tracesUrl = vars.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? (base === undefined ? undefined : new URL('v1/traces', base.endsWith('/') ? base : `${base}/`).href);
  if (tracesUrl === undefined || vars.OTEL_SDK_DISABLED === 'true') return null;
  return Object.freeze({ tracesUrl, serviceName: vars.OTEL_SERVICE_NAME, sampler: vars.OTEL_TRACES_SAMPLER, samplerRatio: vars.OTEL_TRACES_SAMPLER_ARG });
}

/** Enough for HMAC-SHA256 from a random string: 32 characters (e.g. `openssl rand -hex 32` gives 64). */
const MIN_SIGNING_KEY_CHARS = 32;

/**
 * The trace signing key, from the variable or a file (one key, surrounding whitespace
 * ignored). A file configured but holding no key stops the start rather than silently
 * leaving traces unsigned; so do both sources at once, which would leave it unclear which
 * key signs.
 */
function readSigningKey(inline: string | undefined, file: string | undefined): string | null {
  if (inline !== undefined && file !== undefined) {
    throw new ConfigError('TRACE_SIGNING_KEY and TRACE_SIGNING_KEY_FILE are both set; set one');
  }
  let key = inline;
  let variable = 'TRACE_SIGNING_KEY';
  if (file !== undefined) {
    variable = 'TRACE_SIGNING_KEY_FILE';
    try {
      key = readFileSync(file, 'utf8').trim();
    } catch (error) {
      throw new ConfigError(`TRACE_SIGNING_KEY_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (key === '') throw new ConfigError(`TRACE_SIGNING_KEY_FILE: ${file} holds no key`);
  }
  if (key === undefined) return null;
  if (key.length < MIN_SIGNING_KEY_CHARS || /\s/.test(key)) {
    throw new ConfigError(`${variable}: the key must be at least ${MIN_SIGNING_KEY_CHARS} characters without spaces`);
  }
  return key;
}

const DATABASE_URL = /^postgres(?:ql)?:\/\/\S+$/i;

/**
 * The trace database URL, from the variable or a file (surrounding whitespace ignored).
 * Every message names the variable or the file, never the value: it holds a password.
 */
function readDatabaseUrl(inline: string | undefined, file: string | undefined): string | null {
  if (inline !== undefined && file !== undefined) {
    throw new ConfigError('TRACE_DATABASE_URL and TRACE_DATABASE_URL_FILE are both set; set one');
  }
  let url = inline?.trim();
  let variable = 'TRACE_DATABASE_URL';
  if (file !== undefined) {
    variable = 'TRACE_DATABASE_URL_FILE';
    try {
      url = readFileSync(file, 'utf8').trim();
    } catch (error) {
      throw new ConfigError(`TRACE_DATABASE_URL_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    if (url === '') throw new ConfigError(`TRACE_DATABASE_URL_FILE: ${file} holds no URL`);
  }
  if (url === undefined) return null;
  if (!DATABASE_URL.test(url)) {
    throw new ConfigError(
      `${variable}: must be a URL such as postgres://user:password@host:5432/database (the value is not shown: it may hold a password)`,
    );
  }
  return url;
}

/**
 * The effective configuration as the start-up log line states it: everything an operator
 * needs to know what is running, and no secret — tokens are counted, the signing key is
 * on or off, and of the trace database only the host, port and database name are given
 * (never the user, the password or other URL parameters).
 */
export function describeConfig(config: Config): Record<string, unknown> {
  return {
    host: config.host,
    port: config.port,
    brainRoot: config.brainRoot,
    brainRevalidate: config.brainRevalidate,
    brainListingMaxEntries: config.brainListingMaxEntries,
    traces:
      config.traceDatabaseUrl === null
        ? { backend: 'files', dir: config.traceDir, retentionMs: config.traceRetentionMs, signed: config.traceSigningKey !== null }
        : { backend: 'postgres', ...databaseLocation(config.traceDatabaseUrl), retentionMs: config.traceRetentionMs, signed: config.traceSigningKey !== null },
    auth: config.callers.length > 0 ? 'on' : 'off',
    tokenCount: config.callers.length,
    // Names, never tokens: what trace events record.
    callers: config.callers.map((caller) => (caller.readAll ? `${caller.name} (read-all)` : caller.name)),
    allowedHosts: config.allowedHosts,
    limits: {
      rateLimitMax: config.rateLimit.max,
      rateLimitWindowMs: config.rateLimit.windowMs,
      bodyLimit: config.bodyLimit,
      promptLimitChars: config.promptLimitChars,
      maxConnections: config.maxConnections,
      listenBacklog: config.listenBacklog,
    },
    timeouts: {
      headersMs: config.headersTimeoutMs,
      requestMs: config.requestTimeoutMs,
      keepAliveMs: config.keepAliveTimeoutMs,
      shutdownGraceMs: config.shutdownGraceMs,
    },
    pressure: {
      maxEventLoopDelayMs: config.pressure.maxEventLoopDelayMs,
      maxEventLoopUtilization: config.pressure.maxEventLoopUtilization,
      maxHeapUsedBytes: config.pressure.maxHeapUsedBytes ?? 'auto',
      sampleIntervalMs: config.pressure.sampleIntervalMs,
    },
    logLevel: config.logLevel,
    defaultTimezone: config.defaultTimezone,
    voice: { writeTools: config.voiceWriteTools, crossLingual: config.voiceCrossLingual },
    // The collector's origin only: a URL may carry credentials.
    tracing: config.telemetry === null ? 'off' : { collector: new URL(config.telemetry.tracesUrl).origin, serviceName: config.telemetry.serviceName, sampler: config.telemetry.sampler },
  };
}

/** Where a database URL points: host, port and database, nothing else (the URL may hold a password). */
/** Where a trace database is (host, port, database name): what logs and messages may say of its URL, never who logs in or how. */
export function databaseLocation(url: string): { databaseHost: string; databasePort: number | null; database: string | null } {
  try {
    const parsed = new URL(url);
    // libpq also takes the host (or a socket directory) as a parameter when the URL has none.
    const host = parsed.hostname || parsed.searchParams.get('host') || 'localhost';
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || null;
    return { databaseHost: host, databasePort: parsed.port ? Number(parsed.port) : null, database };
  } catch {
    return { databaseHost: 'unparsed', databasePort: null, database: null };
  }
}

export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  const unbracketed = host.replace(/^\[|\]$/g, '');
  if (isIP(unbracketed) === 4) return unbracketed.startsWith('127.');
  if (isIP(unbracketed) === 6) return unbracketed === '::1' || unbracketed === '::ffff:127.0.0.1';
  return false;
}
