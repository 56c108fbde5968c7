import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { derivedCallerName } from '../src/callers.js';
import { sha256Hex } from '../src/core/digest.js';
import { ConfigError, describeConfig, EXAMPLE_BRAIN, isLoopback, loadConfig, parseDuration } from '../src/config.js';
import { tempDir, TEST_TOKEN } from './helpers/app.js';

describe('loadConfig', () => {
  it('gives the documented defaults for an empty environment', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '127.0.0.1',
      brainRoot: EXAMPLE_BRAIN,
      brainRevalidate: 'auto',
      traceRetentionMs: 7 * 86_400_000,
      callers: [],
      allowedHosts: [],
      rateLimit: { max: 600, windowMs: 60_000 },
      bodyLimit: 262_144,
      logLevel: 'info',
      defaultTimezone: 'UTC',
      shutdownGraceMs: 10_000,
      maxConnections: 768,
      listenBacklog: 4096,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      keepAliveTimeoutMs: 5_000,
      voiceWriteTools: false,
      voiceCrossLingual: false,
      workers: 1,
    });
    expect(Object.isFrozen(config)).toBe(true);
    expect(loadConfig({ WORKERS: '4' }).workers).toBe(4);
    expect(loadConfig({ BRAIN_REVALIDATE: 'async' }).brainRevalidate).toBe('async');
    expect(loadConfig({ LISTEN_BACKLOG: '8192' }).listenBacklog).toBe(8192);
  });

  it('opts in to voice write tools and cross-lingual replies only with an explicit true', () => {
    expect(loadConfig({ VOICE_WRITE_TOOLS: 'true', VOICE_CROSS_LINGUAL: 'true' })).toMatchObject({ voiceWriteTools: true, voiceCrossLingual: true });
    expect(loadConfig({ VOICE_WRITE_TOOLS: 'false', VOICE_CROSS_LINGUAL: 'false' })).toMatchObject({ voiceWriteTools: false, voiceCrossLingual: false });
  });

  it.each([
    ['PORT', 'notaport'],
    ['PORT', '70000'],
    ['TRACE_RETENTION', 'forever'],
    ['RATE_LIMIT_MAX', '-1'],
    ['RATE_LIMIT_WINDOW', 'soon'],
    ['BODY_LIMIT', '12abc'],
    ['LOG_LEVEL', 'loud'],
    ['DEFAULT_TIMEZONE', 'Mars/Olympus_Mons'],
    ['MAX_CONNECTIONS', '1'],
    ['MAX_CONNECTIONS', 'many'],
    ['LISTEN_BACKLOG', '0'],
    ['LISTEN_BACKLOG', '65536'],
    ['LISTEN_BACKLOG', 'lots'],
    ['HEADERS_TIMEOUT', '10'],
    ['KEEP_ALIVE_TIMEOUT', '0s'],
    ['REQUEST_TIMEOUT', '2h'],
    // Past a Node timer's range a timeout would fire at once.
    ['SHUTDOWN_GRACE', '30d'],
    ['VOICE_WRITE_TOOLS', 'yes'],
    ['VOICE_CROSS_LINGUAL', '1'],
    ['WORKERS', '0'],
    ['WORKERS', '65'],
    ['WORKERS', 'auto'],
    ['BRAIN_REVALIDATE', 'never'],
  ])('names %s when it is %j', (variable, value) => {
    expect(() => loadConfig({ [variable]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ [variable]: value })).toThrow(new RegExp(`${variable}:`));
  });

  it('refuses a HEADERS_TIMEOUT longer than REQUEST_TIMEOUT, naming both', () => {
    expect(() => loadConfig({ HEADERS_TIMEOUT: '40s' })).toThrow(/HEADERS_TIMEOUT: must not be longer than REQUEST_TIMEOUT/);
    expect(loadConfig({ HEADERS_TIMEOUT: '40s', REQUEST_TIMEOUT: '1m' }).headersTimeoutMs).toBe(40_000);
  });

  it('refuses a non-loopback HOST without tokens, naming the token variable', () => {
    expect(() => loadConfig({ HOST: '0.0.0.0' })).toThrow(/CONTEXT_COMPILER_TOKENS/);
    expect(loadConfig({ HOST: '0.0.0.0', CONTEXT_COMPILER_TOKENS: TEST_TOKEN }).host).toBe('0.0.0.0');
  });

  it('reads tokens from a file, one per line, ignoring comments', async () => {
    const file = join(await tempDir(), 'tokens');
    await writeFile(file, `# voice server\n${TEST_TOKEN}\n\nsecond-token-abcdefghijkl\n`);
    expect(loadConfig({ CONTEXT_COMPILER_TOKENS_FILE: file }).callers.map((caller) => caller.token)).toEqual([TEST_TOKEN, 'second-token-abcdefghijkl']);
  });

  it('names tokens given as name:token, and gives an unnamed one a stable name that is not the token', async () => {
    const file = join(await tempDir(), 'tokens');
    await writeFile(file, `# the voice server\nvoice:${TEST_TOKEN}\nsecond-token-abcdefghijkl\n`);
    const { callers } = loadConfig({ CONTEXT_COMPILER_TOKENS_FILE: file, CONTEXT_COMPILER_TOKENS: 'chat-host:chat-token-0123456789abcdef' });
    expect(callers.map(({ name, token }) => [name, token])).toEqual([
      ['chat-host', 'chat-token-0123456789abcdef'],
      ['voice', TEST_TOKEN],
      [`token-${sha256Hex('second-token-abcdefghijkl').slice(0, 8)}`, 'second-token-abcdefghijkl'],
    ]);
    expect(derivedCallerName('second-token-abcdefghijkl')).toBe(callers[2]!.name);
    expect(callers[2]!.name).not.toContain('second-token');
    // Several callers: none reads the others' runs unless granted.
    expect(callers.map((caller) => caller.readAll)).toEqual([false, false, false]);
    expect(JSON.stringify(describeConfig(loadConfig({ CONTEXT_COMPILER_TOKENS_FILE: file })))).not.toContain(TEST_TOKEN);
  });

  it('grants read-all to the names CONTEXT_COMPILER_READ_ALL lists, and always to a sole caller', () => {
    const two = `voice:${TEST_TOKEN},ops:ops-token-0123456789abcdef`;
    expect(loadConfig({ CONTEXT_COMPILER_TOKENS: two, CONTEXT_COMPILER_READ_ALL: 'ops' }).callers.map((caller) => [caller.name, caller.readAll])).toEqual([
      ['voice', false],
      ['ops', true],
    ]);
    expect(loadConfig({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN }).callers[0]!.readAll).toBe(true);
    expect(() => loadConfig({ CONTEXT_COMPILER_TOKENS: two, CONTEXT_COMPILER_READ_ALL: 'nobody' })).toThrow(/^CONTEXT_COMPILER_READ_ALL: no token is named "nobody" \(the names are voice, ops\)/);
    expect(() => loadConfig({ CONTEXT_COMPILER_READ_ALL: 'ops' })).toThrow(/CONTEXT_COMPILER_READ_ALL: .*no token is configured/);
  });

  it('refuses two names for one token, one name for two tokens, and a short token after its name', () => {
    expect(() => loadConfig({ CONTEXT_COMPILER_TOKENS: `a:${TEST_TOKEN},b:${TEST_TOKEN}` })).toThrow(/CONTEXT_COMPILER_TOKENS: one token is given two names \(a and b\)/);
    expect(() => loadConfig({ CONTEXT_COMPILER_TOKENS: `a:${TEST_TOKEN},a:${TEST_TOKEN}x` })).toThrow(/two tokens are named a/);
    expect(() => loadConfig({ CONTEXT_COMPILER_TOKENS: 'voice:short' })).toThrow(/CONTEXT_COMPILER_TOKENS: every token must be at least 16 characters/);
    // The same token listed twice under one name is one caller.
    expect(loadConfig({ CONTEXT_COMPILER_TOKENS: `a:${TEST_TOKEN},a:${TEST_TOKEN}` }).callers).toHaveLength(1);
  });

  it('reads ALLOWED_HOSTS as host names without ports, and names the variable for anything else', () => {
    expect(loadConfig({ ALLOWED_HOSTS: 'Context.Internal, 10.0.0.5,[::1],context.internal' }).allowedHosts).toEqual(['context.internal', '10.0.0.5', '[::1]']);
    for (const value of ['context.internal:8080', 'http://context.internal', 'a b', '*', '-bad.example', '[::1']) {
      expect(() => loadConfig({ ALLOWED_HOSTS: value }), value).toThrow(/^invalid configuration\n {2}ALLOWED_HOSTS: .* is not a host name/);
    }
  });

  it('refuses a tokens file that holds no token (only comments or blank lines), naming the file, even beside inline tokens', async () => {
    const dir = await tempDir();
    for (const [name, text] of [['comments', '# voice server\n  # chat host\n\n'], ['empty', ''], ['commas', ' , ,\n']] as const) {
      const file = join(dir, name);
      await writeFile(file, text);
      expect(() => loadConfig({ CONTEXT_COMPILER_TOKENS_FILE: file }), name).toThrow(ConfigError);
      expect(() => loadConfig({ CONTEXT_COMPILER_TOKENS_FILE: file }), name).toThrow(`CONTEXT_COMPILER_TOKENS_FILE: ${file} holds no token`);
      expect(() => loadConfig({ CONTEXT_COMPILER_TOKENS_FILE: file, CONTEXT_COMPILER_TOKENS: TEST_TOKEN }), name).toThrow(/holds no token/);
    }
  });

  it('refuses short tokens and unreadable token files', () => {
    expect(() => loadConfig({ CONTEXT_COMPILER_TOKENS: 'short' })).toThrow(/CONTEXT_COMPILER_TOKENS/);
    expect(() => loadConfig({ CONTEXT_COMPILER_TOKENS_FILE: '/nonexistent/tokens' })).toThrow(/CONTEXT_COMPILER_TOKENS_FILE/);
  });

  it('reads TRACE_SIGNING_KEY from the variable or a file, and has none by default', async () => {
    const key = 'k'.repeat(32);
    expect(loadConfig({}).traceSigningKey).toBeNull();
    expect(loadConfig({ TRACE_SIGNING_KEY: key }).traceSigningKey).toBe(key);
    const file = join(await tempDir(), 'trace-key');
    await writeFile(file, `${key}\n`);
    expect(loadConfig({ TRACE_SIGNING_KEY_FILE: file }).traceSigningKey).toBe(key);
  });

  it('refuses a signing key file that holds no key, a short key, and both sources at once, naming the variable', async () => {
    const file = join(await tempDir(), 'trace-key');
    await writeFile(file, '\n  \n');
    expect(() => loadConfig({ TRACE_SIGNING_KEY_FILE: file })).toThrow(new ConfigError(`TRACE_SIGNING_KEY_FILE: ${file} holds no key`));
    expect(() => loadConfig({ TRACE_SIGNING_KEY_FILE: '/nonexistent/key' })).toThrow(/^TRACE_SIGNING_KEY_FILE: cannot read/);
    expect(() => loadConfig({ TRACE_SIGNING_KEY: 'too short' })).toThrow(/^TRACE_SIGNING_KEY: the key must be at least 32 characters/);
    await writeFile(file, 'k'.repeat(32));
    expect(() => loadConfig({ TRACE_SIGNING_KEY: 'k'.repeat(32), TRACE_SIGNING_KEY_FILE: file })).toThrow(/both set/);
  });

  it('reads TRACE_DATABASE_URL from the variable or a file, and uses trace files without one', async () => {
    const url = 'postgres://traces:s3cret-pw@db.internal:5432/traces?sslmode=require';
    expect(loadConfig({}).traceDatabaseUrl).toBeNull();
    expect(loadConfig({ TRACE_DATABASE_URL: url }).traceDatabaseUrl).toBe(url);
    const file = join(await tempDir(), 'database-url');
    await writeFile(file, `${url}\n`);
    expect(loadConfig({ TRACE_DATABASE_URL_FILE: file }).traceDatabaseUrl).toBe(url);
  });

  it('refuses a bad TRACE_DATABASE_URL naming the variable, never the value (it holds a password)', async () => {
    const secret = 'hunter2-do-not-print';
    const attempts: Record<string, string>[] = [{ TRACE_DATABASE_URL: `mysql://traces:${secret}@db/traces` }, { TRACE_DATABASE_URL: `traces:${secret}@db` }];
    for (const env of attempts) {
      const error = (() => {
        try {
          loadConfig(env);
        } catch (caught) {
          return caught as Error;
        }
        return null;
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect(error!.message).toMatch(/^TRACE_DATABASE_URL: must be a URL such as postgres:\/\/user:password@host:5432\/database \(the value is not shown/);
      expect(error!.message).not.toContain(secret);
    }
    const file = join(await tempDir(), 'database-url');
    await writeFile(file, '\n');
    expect(() => loadConfig({ TRACE_DATABASE_URL_FILE: file })).toThrow(new ConfigError(`TRACE_DATABASE_URL_FILE: ${file} holds no URL`));
    await writeFile(file, `https://user:${secret}@db/traces`);
    expect(() => loadConfig({ TRACE_DATABASE_URL_FILE: file })).toThrow(/^TRACE_DATABASE_URL_FILE: must be a URL/);
    expect(() => loadConfig({ TRACE_DATABASE_URL: 'postgres://a@b/c', TRACE_DATABASE_URL_FILE: file })).toThrow(/both set/);
  });

  it('reads the load-shedding thresholds: durations, fractions, bytes or auto, and 0 for off; refuses anything else naming the variable', () => {
    expect(
      loadConfig({ PRESSURE_MAX_EVENT_LOOP_DELAY: '1s', PRESSURE_MAX_EVENT_LOOP_UTILIZATION: '0.98', PRESSURE_MAX_HEAP_USED: '150000000', PRESSURE_SAMPLE_INTERVAL: '500ms' }).pressure,
    ).toEqual({ maxEventLoopDelayMs: 1000, maxEventLoopUtilization: 0.98, maxHeapUsedBytes: 150_000_000, sampleIntervalMs: 500 });
    expect(loadConfig({ PRESSURE_MAX_EVENT_LOOP_DELAY: '0', PRESSURE_MAX_HEAP_USED: '0' }).pressure).toMatchObject({ maxEventLoopDelayMs: 0, maxHeapUsedBytes: 0 });
    expect(loadConfig({ PRESSURE_MAX_HEAP_USED: 'auto' }).pressure.maxHeapUsedBytes).toBeNull();
    for (const [variable, value] of [
      ['PRESSURE_MAX_EVENT_LOOP_DELAY', 'fast'],
      ['PRESSURE_MAX_EVENT_LOOP_DELAY', '2m'],
      ['PRESSURE_MAX_EVENT_LOOP_UTILIZATION', '1.5'],
      ['PRESSURE_MAX_EVENT_LOOP_UTILIZATION', '98%'],
      ['PRESSURE_MAX_HEAP_USED', '1000'],
      ['PRESSURE_MAX_HEAP_USED', '128MB'],
      ['PRESSURE_SAMPLE_INTERVAL', '10ms'],
    ] as const) {
      expect(() => loadConfig({ [variable]: value }), `${variable}=${value}`).toThrow(new RegExp(`${variable}: must`));
    }
  });

  it('accepts the rate-limit window forms @fastify/rate-limit documents', () => {
    expect(loadConfig({ RATE_LIMIT_WINDOW: '30 seconds' }).rateLimit.windowMs).toBe(30_000);
    expect(loadConfig({ RATE_LIMIT_WINDOW: '5000' }).rateLimit.windowMs).toBe(5000);
    expect(loadConfig({ RATE_LIMIT_WINDOW: '2m' }).rateLimit.windowMs).toBe(120_000);
  });
});

describe('helpers', () => {
  it('parses durations', () => {
    expect(parseDuration('7d')).toBe(604_800_000);
    expect(parseDuration('250ms')).toBe(250);
    expect(parseDuration('7 days')).toBeUndefined();
  });

  it('knows loopback addresses', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]']) expect(isLoopback(host)).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.1', 'example.com']) expect(isLoopback(host)).toBe(false);
  });
});
