import { appendFile, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildTestApp, copyExampleBrain, tempDir, TEST_TOKEN } from '../helpers/app.js';
import { failedEvent } from '../helpers/trace-events.js';
import { createDatabase, dropDatabase } from '../helpers/postgres.js';
import { cli, cliProcess } from '../helpers/cli.js';
import { postgresCluster } from '../helpers/trace-backends.js';

const NOW = '2026-11-30T17:30:00Z';

// Most tests run the command in this process (cli()); the few that are about the process
// itself (its exit status, argv, a pipe) run the built bin (cliProcess()).
describe('context-compiler CLI', () => {
  it('prints help with --help and exits 0 (the bin, as a process)', async () => {
    const result = await cliProcess(['--help']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Usage: context-compiler');
    expect(result.stdout).toContain('compile --persona');
  });

  it('exits 2 with a clear message on an unknown command (the bin, as a process) or option', async () => {
    const [unknown, badOption] = await Promise.all([cliProcess(['frobnicate']), cli(['trace', 'x', '--nope'])]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "frobnicate"');
    expect(badOption.code).toBe(2);
    expect(badOption.stderr).toContain('--nope');
  });

  it('regression: refuses arguments a command does not take, in one line and where to read more (--task Send the digest compiled the task "Send" and exited 0; a usage error printed the 60-line help)', async () => {
    const [task, trace, option] = await Promise.all([
      cli(['compile', '--worker', 'scribe', '--task', 'Send', 'the', 'digest']),
      cli(['trace', 'run-a', 'run-b']),
      cli(['runs', '--nope']),
    ]);
    expect(task.code).toBe(2);
    expect(task.stdout).toBe('');
    expect(task.stderr).toBe('context-compiler: compile does not take "the digest": quote a value with spaces (--task "Send the digest")\nRun "context-compiler help" for the commands and their options.\n');
    expect(trace.code).toBe(2);
    expect(trace.stderr.split('\n')[0]).toBe('context-compiler: trace does not take "run-b": quote a value with spaces (--task "Send the digest")');
    expect(option.code).toBe(2);
    expect(option.stderr.trimEnd().split('\n')).toHaveLength(2);
  });

  it('refuses an unsafe run id before touching the store', async () => {
    const result = await cli(['trace', '../etc/passwd']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('not a run id');
  });

  it('prints a traced run from a trace directory, and says when a run is unknown', async () => {
    const traceDir = join(await tempDir(), 'traces');
    const { app } = await buildTestApp({ TRACE_DIR: traceDir });
    const compiled = await app.inject({
      method: 'POST',
      url: '/compile',
      payload: { phase: 'start', surface: 'chat', worker: 'scribe', channelId: 'general', runId: 'cli-run-1', now: NOW },
    });
    expect(compiled.statusCode).toBe(200);
    await app.close();

    // Side by side: each reads the same files, and none writes.
    const [text, json, missing] = await Promise.all([
      cli(['trace', 'cli-run-1', '--dir', traceDir, '--prompts']),
      cli(['trace', 'cli-run-1', '--dir', traceDir, '--json']),
      cli(['trace', 'no-such-run', '--dir', traceDir]),
    ]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('run cli-run-1 — 1 event');
    expect(text.stdout).toContain('prompts verified');
    expect(text.stdout).toContain('identity');
    expect(text.stdout).toContain(compiled.json().systemPrompt.split('\n')[0]);

    expect(JSON.parse(json.stdout).events[0].promptSha256).toBe(compiled.json().promptSha256);

    expect(missing.code).toBe(1);
    // Regression: it did not say where it looked.
    expect(missing.stderr).toContain(`no run no-such-run in trace files in ${traceDir}`);
  });

  it('finds a run by the request id of a log line (runs) and compares it with the run before (diff), with the text that changed', async () => {
    const traceDir = join(await tempDir(), 'traces');
    const brainRoot = await copyExampleBrain();
    const { app } = await buildTestApp({ TRACE_DIR: traceDir, BRAIN_ROOT: brainRoot });
    const compile = async (runId: string, now: string) => {
      const payload = { phase: 'start', surface: 'chat', worker: 'scribe', channelId: 'general', task: 'Draft the launch post.', runId, now };
      expect((await app.inject({ method: 'POST', url: '/compile', headers: { 'x-request-id': `req-${runId}` }, payload })).statusCode).toBe(200);
    };
    await compile('cli-diff-1', '2026-11-30T17:30:00Z');
    await appendFile(join(brainRoot, 'workers/scribe/identity.md'), '\nPrefer short paragraphs.\n');
    await compile('cli-diff-2', '2026-11-30T17:31:00Z');
    await app.close();

    // Side by side: each reads the same files, and none writes.
    const [found, listing, diff, jsonDiff, nothing] = await Promise.all([
      cli(['runs', '--dir', traceDir, '--request-id', 'req-cli-diff-2']),
      cli(['runs', '--dir', traceDir, '--worker', 'scribe', '--json']),
      cli(['diff', 'cli-diff-2', 'cli-diff-1', '--dir', traceDir]),
      cli(['diff', 'cli-diff-1', 'cli-diff-2', '--dir', traceDir, '--json']),
      cli(['diff', 'cli-diff-1', 'no-such-run', '--dir', traceDir]),
    ]);
    expect(found.code, found.stderr).toBe(0);
    expect(found.stderr).toContain(`reading trace files in ${traceDir}`);
    expect(found.stdout).toMatch(/^ {2}2026-11-30 17:31 +\S+ \S+ +worker scribe +- +200 delivered +- +1 +cli-diff-2$/m);
    expect(found.stdout).not.toContain('cli-diff-1');
    const listed = JSON.parse(listing.stdout);
    expect(listed.runs.map((run: { runId: string; compiledFor: string }) => [run.runId, run.compiledFor])).toEqual([
      ['cli-diff-2', '2026-11-30T17:31:00Z'],
      ['cli-diff-1', '2026-11-30T17:30:00Z'],
    ]);

    expect(diff.code, diff.stderr).toBe(0);
    expect(diff.stdout).toMatch(/^ {2}before +cli-diff-1 /m);
    expect(diff.stdout).toContain('minute changed: 17:30 → 17:31 UTC');
    expect(diff.stdout).toMatch(/^ {2}worker-stable .* moved +#0 identity changed: sources changed: workers\/scribe\/identity\.md$/m);
    expect(diff.stdout).toMatch(/^ {2}#5 clock +builtin:clock .* changed +minute changed: 17:30 → 17:31 UTC$/m);
    expect(diff.stdout).toContain('#0 identity (workers/scribe/identity.md) changed:\n');
    expect(diff.stdout).toContain('\n+ Prefer short paragraphs.\n');
    expect(diff.stdout).toMatch(/\n- Current date and time: .*09:30 .*\n\+ Current date and time: .*09:31 /);
    const json = JSON.parse(jsonDiff.stdout);
    expect(json.texts['0']).toMatchObject({ kind: 'diff', diff: { kind: 'lines', added: 2, removed: 0 } });
    // The digests the texts were checked against, as the viewer and `trace` label them: each block's content sha256.
    const identity = json.blocks[0];
    expect(diff.stdout).toContain(
      `#0 identity (workers/scribe/identity.md) changed:\n  2 lines added, 0 removed; each text checked against its content sha256: ${identity.before.block.sha256.slice(0, 12)} → ${identity.after.block.sha256.slice(0, 12)}\n`,
    );
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toContain(`run no-such-run delivered no prompt in trace files in ${traceDir}`);
  });

  it('regression: a call is one conversation — runs lists a refresh under its connect, and trace names the call’s parts (a refresh was listed as a run of its own, newest above its connect)', async () => {
    const traceDir = join(await tempDir(), 'traces');
    const brainRoot = await copyExampleBrain();
    const { app } = await buildTestApp({ TRACE_DIR: traceDir, BRAIN_ROOT: brainRoot });
    expect((await app.inject('/context/mars?runId=cli-call-1&now=2026-11-30T10:00:00Z')).statusCode).toBe(200);
    expect((await app.inject('/context/mars?runId=cli-call-2&now=2026-11-30T10:01:00Z')).statusCode).toBe(200);
    await appendFile(join(brainRoot, 'memory/2026-11-30.md'), '\n- Morning task: call the seed supplier.\n');
    expect((await app.inject('/context/mars/refresh?runId=cli-call-1&now=2026-11-30T10:05:00Z')).statusCode).toBe(200);
    await app.close();

    const [list, connect, refresh, alone] = await Promise.all([
      cli(['runs', '--dir', traceDir]),
      cli(['trace', 'cli-call-1', '--dir', traceDir]),
      cli(['trace', 'cli-call-1:refresh', '--dir', traceDir]),
      cli(['trace', 'cli-call-2', '--dir', traceDir]),
    ]);
    expect(list.code).toBe(0);
    const ids = list.stdout.split('\n').slice(1).map((line) => line.trim().split(/\s{2,}/).at(-1));
    // Newest first by latest event, but the refresh sits right under its connect, not above it.
    expect(ids.filter(Boolean)).toEqual(['cli-call-2', 'cli-call-1', '↳ refresh cli-call-1:refresh']);
    expect(connect.stdout).toContain('call: connect cli-call-1 (this run)\n  ↳ refresh cli-call-1:refresh: 1 event, latest 200 delivered');
    expect(refresh.stdout).toContain('call: connect cli-call-1\n  ↳ refresh cli-call-1:refresh: 1 event, latest 200 delivered (this run)');
    expect(refresh.stdout).toContain('(context-compiler trace cli-call-1 for the connect)');
    expect(alone.stdout).toContain('call: connect cli-call-2 (this run)\n  no mid-call refresh and no reconnect');
  });

  it('regression: compile --brain <a directory that does not exist> exits 4 naming it (it compiled a prompt from nothing and exited 0)', async () => {
    const [missing, fromEnv] = await Promise.all([
      // The bin, as a process: the status it exits with.
      cliProcess(['compile', '--persona', 'mars', '--brain', '/nonexistent']),
      cli(['hud', '--worker', 'scribe'], { BRAIN_ROOT: '/nonexistent-brain' }),
    ]);
    expect(missing).toMatchObject({ code: 4, stdout: '' });
    expect(missing.stderr).toContain('--brain /nonexistent: no such directory');
    expect(fromEnv.code).toBe(4);
    expect(fromEnv.stderr).toContain('BRAIN_ROOT /nonexistent-brain: no such directory');
  });

  it('regression: a flag that needs another flag, or that the command does not take, is a usage error (--verify-sources without --url was ignored)', async () => {
    const cases = [
      [['trace', 'x', '--dir', '/tmp', '--verify-sources'], '--verify-sources needs --url'],
      [['trace', 'x', '--dir', '/tmp', '--url', 'http://127.0.0.1:9'], '--dir reads trace files and --url asks a running service'],
      [['compile', '--persona', 'mars', '--limit', '5'], '--limit is not an option of compile'],
      [['runs', '--prompts'], '--prompts is not an option of runs'],
      [['runs', '--dir', '/tmp', '--from', 'yesterday'], '--from: must be an ISO 8601'],
      [['diff', 'only-one'], 'diff: context-compiler diff <runA> <runB> needs a run id'],
    ] as const;
    const results = await Promise.all(cases.map(([args]) => cli([...args])));
    cases.forEach(([args, says], i) => {
      expect(results[i]!.code, args.join(' ')).toBe(2);
      expect(results[i]!.stderr, args.join(' ')).toContain(says);
    });
  });

  it('regression: trace asks the service at CONTEXT_COMPILER_URL, but --dir still reads the directory (the URL won)', async () => {
    const { app } = await buildTestApp({ CONTEXT_COMPILER_TOKENS: TEST_TOKEN });
    const baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
    const compiled = await app.inject({
      method: 'POST',
      url: '/compile',
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
      payload: { phase: 'start', surface: 'chat', worker: 'scribe', channelId: 'general', runId: 'cli-url-1', now: NOW },
    });
    expect(compiled.statusCode).toBe(200);
    const service = { CONTEXT_COMPILER_URL: baseUrl, CONTEXT_COMPILER_TOKEN: TEST_TOKEN };

    const emptyDir = join(await tempDir(), 'traces');
    const [remote, local] = await Promise.all([cli(['trace', 'cli-url-1'], service), cli(['trace', 'cli-url-1', '--dir', emptyDir], service)]);
    expect(remote.code).toBe(0);
    expect(remote.stdout).toContain('run cli-url-1 — 1 event');

    expect(local.code).toBe(1);
    expect(local.stderr).toContain('no run cli-url-1');
  });

  it('regression: an unknown JSON key sent terminal escape sequences through the CLI; every printer now shows them inert', async () => {
    const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
    const key = '\u001b]0;pwned\u0007\u001b[2J';
    const brain = await copyExampleBrain();
    // A key that sets the terminal title and clears the screen.
    await writeFile(join(brain, 'personas', 'tools.json'), JSON.stringify({ [key]: true }));
    const [compiled, hud] = await Promise.all([
      cli(['compile', '--persona', 'venus', '--brain', brain, '--now', NOW]),
      cli(['hud', '--persona', 'venus', '--brain', brain, '--now', NOW, '--json']),
    ]);
    expect(compiled.code).toBe(0);
    expect(compiled.stderr).toContain('warning: personas/tools.json');
    expect(compiled.stderr).not.toMatch(UNSAFE);
    expect(hud.stdout + hud.stderr).not.toMatch(UNSAFE);

    // The warning as a release before traced it, escape sequences and all, printed by `trace` (text and JSON).
    const traceDir = join(await tempDir(), 'traces');
    const { app } = await buildTestApp({ TRACE_DIR: traceDir });
    const warning = `personas/tools.json is invalid at /: Unrecognized key: "${key}"; the default tools apply`;
    await app.traces.append(failedEvent('cli-escape', { warnings: [warning] }));
    await app.close();
    const [text, json] = await Promise.all([cli(['trace', 'cli-escape', '--dir', traceDir]), cli(['trace', 'cli-escape', '--dir', traceDir, '--json'])]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('warning: personas/tools.json is invalid at /: Unrecognized key: "⟨U+001B⟩⟨U+001B⟩"');
    expect(text.stdout).not.toMatch(UNSAFE);
    expect(json.stdout).not.toMatch(UNSAFE);
    expect(JSON.parse(json.stdout).events[0].warnings).toEqual([warning]);
  });

  it('pages a long run: prints every event a page at a time, and --json one page with its cursor', async () => {
    const traceDir = join(await tempDir(), 'traces');
    const { app } = await buildTestApp({ TRACE_DIR: traceDir });
    for (let i = 0; i < 45; i++) await app.traces.append(failedEvent('cli-long', { request: { n: i } }));
    await app.close();
    const [all, firstPage, zero] = await Promise.all([
      cli(['trace', 'cli-long', '--dir', traceDir]),
      cli(['trace', 'cli-long', '--dir', traceDir, '--json', '--limit', '40']),
      cli(['trace', 'cli-long', '--dir', traceDir, '--limit', '0']),
    ]);
    expect(all.code).toBe(0);
    expect(all.stdout).toContain('run cli-long — events 1–20, more follow');
    expect(all.stdout).toContain('run cli-long — events 41–45, the last');
    expect(all.stdout.match(/^#\d+ /gm)).toHaveLength(45);
    expect(all.stdout).toContain('#45 ');
    const first = JSON.parse(firstPage.stdout);
    expect(first.events).toHaveLength(40);
    const rest = JSON.parse((await cli(['trace', 'cli-long', '--dir', traceDir, '--json', '--cursor', first.nextCursor])).stdout);
    expect(rest.events.map((event: { request: { n: number } }) => event.request.n)).toEqual([40, 41, 42, 43, 44]);
    expect(rest.nextCursor).toBeNull();
    expect(zero.code).toBe(2);
  });

  it('says whether a run’s chain is signed, and reports an event edited on disk', async () => {
    const key = 'trace-signing-key-0123456789abcdef-0123';
    const traceDir = join(await tempDir(), 'traces');
    const { app } = await buildTestApp({ TRACE_DIR: traceDir, TRACE_SIGNING_KEY: key });
    const payload = { phase: 'start', surface: 'chat', worker: 'scribe', channelId: 'general', now: NOW };
    for (const runId of ['cli-run-a', 'cli-run-b']) expect((await app.inject({ method: 'POST', url: '/compile', payload: { ...payload, runId } })).statusCode).toBe(200);
    await app.close();

    const signed = await cli(['trace', 'cli-run-a', '--dir', traceDir], { TRACE_SIGNING_KEY: key });
    expect(signed.code).toBe(0);
    expect(signed.stdout).toContain('chain signed: every event holds its HMAC link');
    expect(signed.stdout).toContain('prompts verified');

    const [name] = (await readdir(traceDir)).filter((file) => file.endsWith('.jsonl'));
    const path = join(traceDir, name!);
    await writeFile(path, (await readFile(path, 'utf8')).replace(/("runId":"cli-run-a".*?)"status":200/, '$1"status":299'));
    const [broken, keyless] = await Promise.all([cliProcess(['trace', 'cli-run-a', '--dir', traceDir], { TRACE_SIGNING_KEY: key }), cli(['trace', 'cli-run-b', '--dir', traceDir])]);
    // Regression: a broken chain exited 0, so a script could not tell; it is 3, as documented (the bin, as a process).
    expect(broken.code).toBe(3);
    expect(broken.stderr).toContain('the hash chain of run cli-run-a is broken');
    expect(broken.stdout).toContain('CHAIN BROKEN');
    expect(broken.stdout).toMatch(/problem: .*the event at .* was altered or forged/);
    expect(broken.stdout).toContain('EVENT ALTERED, FORGED OR OUT OF PLACE');
    // Without the key the same file cannot be checked, and says so.
    expect(keyless.stdout).toContain('chain unverifiable');
  });

  it('compiles the mars persona in process, reproducibly, with identity first', async () => {
    const [first, second, text] = await Promise.all([
      cli(['compile', '--persona', 'mars', '--now', NOW, '--json']),
      cli(['compile', '--persona', 'mars', '--now', NOW, '--json']),
      cli(['compile', '--persona', 'mars', '--now', NOW]),
    ]);
    expect(first.code).toBe(0);
    const result = JSON.parse(first.stdout);
    expect(result.persona).toBe('mars');
    expect(result.blocks[0].kind).toBe('identity');
    expect(result.systemPrompt.startsWith(result.instructions.slice(0, 40))).toBe(true);
    expect(JSON.parse(second.stdout).promptSha256).toBe(result.promptSha256);
    expect(text.stdout).toBe(result.instructions);
  });

  it('regression: compile prints byte for byte what ?format=text returns (it printed one more byte, a newline)', async () => {
    const { app } = await buildTestApp();
    const personas = ['mars', 'venus'];
    // mars through the bin's stdout, a real pipe; venus in this process.
    const printed = await Promise.all(personas.map((persona) => (persona === 'mars' ? cliProcess : cli)(['compile', '--persona', persona, '--now', NOW, '--topic', 'garden'])));
    for (const [i, persona] of personas.entries()) {
      const served = await app.inject({ method: 'GET', url: `/context/${persona}?now=${NOW}&topicId=garden&format=text` });
      expect(served.statusCode).toBe(200);
      expect(printed[i]!.code).toBe(0);
      expect(Buffer.from(printed[i]!.stdout)).toEqual(served.rawPayload);
    }
  });

  it('compiles a worker in process through the same job as POST /compile: byte for byte its ?format=text body', async () => {
    const { app } = await buildTestApp();
    const cases = [
      { flags: ['--channel', 'general', '--message', 'Tighten the sign-off, please.'], body: { phase: 'turn', surface: 'chat', channelId: 'general', message: 'Tighten the sign-off, please.' } },
      { flags: ['--task', 'Draft the weekly update.', '--surface', 'queued-task'], body: { phase: 'start', surface: 'queued-task', task: 'Draft the weekly update.' } },
    ];
    const [printed, jsonRun] = await Promise.all([
      Promise.all(cases.map(({ flags }) => cli(['compile', '--worker', 'scribe', '--now', NOW, ...flags]))),
      cli(['compile', '--worker', 'scribe', '--channel', 'general', '--now', NOW, '--json']),
    ]);
    for (const [i, { body }] of cases.entries()) {
      const served = await app.inject({ method: 'POST', url: '/compile?format=text', payload: { worker: 'scribe', now: NOW, ...body } });
      expect(served.statusCode).toBe(200);
      expect(printed[i]!.code, printed[i]!.stderr).toBe(0);
      expect(Buffer.from(printed[i]!.stdout)).toEqual(served.rawPayload);
    }
    const json = JSON.parse(jsonRun.stdout);
    expect(json).toMatchObject({ worker: 'scribe', blocks: [{ kind: 'identity' }, ...Array(json.blocks.length - 1).fill(expect.anything())] });
    expect(json.sources.map((source: { path: string }) => source.path)).toContain('channels/general/purpose.md');
  });

  it('prints the HUD of a persona or a worker compile: the same HUD the service answers with ?hud=1', async () => {
    const { app } = await buildTestApp();
    const served = (await app.inject(`/context/mars?now=${NOW}&hud=1`)).json();
    const [json, text, worker, refused, usage] = await Promise.all([
      cli(['hud', '--persona', 'mars', '--now', NOW, '--json']),
      cli(['hud', '--persona', 'mars', '--now', NOW]),
      cli(['hud', '--worker', 'courier', '--task', 'Send the digest', '--surface', 'queued-task', '--role', 'reviewer', '--engine', 'gpt-4.1', '--now', NOW]),
      cli(['hud', '--worker', 'courier', '--role', 'admin', '--now', NOW]),
      cli(['hud', '--now', NOW]),
    ]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(served.hud);
    expect(text.stdout).toContain(`HUD of persona mars — ${served.hud.files.length} files looked for`);
    expect(text.stdout).toMatch(/^ {2}personas\/mars\.md +missing$/m);
    expect(text.stdout).toMatch(/^ {2}SOUL\.md +yes +680 /m);

    expect(worker.code, worker.stderr).toBe(0);
    expect(worker.stdout).toContain('HUD of worker courier');
    expect(worker.stdout).toMatch(/^ {2}workers\/courier\/roles\/reviewer\.md +yes .* role /m);
    expect(worker.stdout).toMatch(/^ {2}workers\/courier\/connections\.json +yes .* connections /m);
    expect(worker.stdout).toMatch(/^ {2}platform\/blueprint\.md +yes .* blueprint /m);
    // A role the worker does not admit fails the compile, naming it.
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('does not admit role "admin"');
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('hud needs --persona');
  });

  it('a bad worker flag (unknown worker, unsafe channel, bad surface, persona flags) is a usage error, exit 2', async () => {
    const cases = [
      [['--worker', 'nobody'], 'No worker "nobody"'],
      [['--worker', 'scribe', '--channel', '../x'], '--channel'],
      [['--worker', 'scribe', '--surface', 'radio'], '--surface'],
      [['--worker', 'scribe', '--topic', 'garden'], '--topic is for --persona'],
      [['--persona', 'mars', '--message', 'hi'], '--message is for --worker'],
      [['--persona', 'mars', '--worker', 'scribe'], 'not both'],
      [['--persona', 'mars', '--role', 'editor'], '--role is for --worker'],
      [['--worker', 'scribe', '--role', '../x'], '--role'],
      [['--persona', 'mars', '--engine', 'GPT 4'], '--engine'],
      [['--worker', 'scribe', '--engine', 'GPT 4'], '--engine'],
    ] as const;
    const results = await Promise.all(cases.map(([args]) => cli(['compile', ...args, '--now', NOW])));
    cases.forEach(([args, says], i) => {
      expect(results[i]!.code, args.join(' ')).toBe(2);
      expect(results[i]!.stderr, args.join(' ')).toContain(says);
    });
  });

  it('adds a topic and reads another brain with --brain', async () => {
    const brain = await copyExampleBrain();
    await writeFile(join(brain, 'topics', 'cli-topic.md'), '# CLI topic\n\nSummary: a topic only this test wrote.\n');
    const result = await cli(['compile', '--persona', 'venus', '--brain', brain, '--topic', 'cli-topic', '--now', NOW, '--json']);
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).inputPrompt).toContain('a topic only this test wrote');
  });

  it('regression: a bad flag value (unknown persona, unsafe topic, bad --now or --timezone) is a usage error, exit 2 as documented (was 1)', async () => {
    const [unknown, unsafe, badNow, badZone, missing] = await Promise.all([
      cli(['compile', '--persona', 'jupiter', '--now', NOW]),
      cli(['compile', '--persona', 'mars', '--topic', '../secrets']),
      cli(['compile', '--persona', 'mars', '--now', 'yesterday']),
      cli(['compile', '--persona', 'mars', '--timezone', 'Mars/Olympus']),
      cli(['compile']),
    ]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('mars');
    expect(unsafe.code).toBe(2);
    expect(unsafe.stderr).toContain('--topic must be a slug');
    expect(badNow.code).toBe(2);
    expect(badNow.stderr).toContain('--now');
    expect(badZone.code).toBe(2);
    expect(badZone.stderr).toContain('timezone');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--persona');
    expect(missing.stderr).toContain('--worker');
  });
});

const cluster = postgresCluster();

describe('context-compiler migrate without a database', () => {
  it('exits 2 and says what it needs', async () => {
    const result = await cli(['migrate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('migrate needs TRACE_DATABASE_URL');
  });
});

describe.skipIf(cluster.skipped !== null)(`context-compiler migrate and trace on PostgreSQL${cluster.skipped ? ` (SKIPPED: ${cluster.skipped})` : ''}`, () => {
  it('migrates the trace tables idempotently, reads a run from the database, and never prints the password', async () => {
    const url = await createDatabase(cluster.url!);
    try {
      const first = await cli(['migrate'], { TRACE_DATABASE_URL: url });
      expect(first).toMatchObject({ code: 0, stdout: 'trace schema migrated to version 3 (applied 1, 2, 3)\n' });
      expect((await cli(['migrate'], { TRACE_DATABASE_URL: url })).stdout).toBe('trace schema already at version 3\n');

      const { app } = await buildTestApp({ TRACE_DATABASE_URL: url });
      const compiled = await app.inject({ method: 'POST', url: '/compile', payload: { phase: 'start', surface: 'chat', worker: 'scribe', channelId: 'general', runId: 'cli-pg-1', now: NOW } });
      expect(compiled.statusCode).toBe(200);
      await app.close();
      const wrong = new URL(url);
      wrong.password = 'not-the-password-4f1c9e';
      const [text, refused] = await Promise.all([cli(['trace', 'cli-pg-1'], { TRACE_DATABASE_URL: url }), cli(['migrate'], { TRACE_DATABASE_URL: wrong.toString() })]);
      expect(text.code).toBe(0);
      // It names the database it read, never who logs in to it.
      expect(text.stderr).toMatch(/reading the PostgreSQL trace database \S+ on 127\.0\.0\.1:\d+ \(TRACE_DATABASE_URL\)/);
      expect(text.stderr).not.toContain(new URL(url).password);
      expect(text.stdout).toContain('run cli-pg-1 — 1 event');
      expect(text.stdout).toContain('prompts verified');

      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('trace database: password authentication failed (28P01)');
      expect(refused.stderr + refused.stdout).not.toContain('not-the-password-4f1c9e');
    } finally {
      await dropDatabase(cluster.url!, url);
    }
  });

});
