/**
 * The runbook's alerts (docker/prometheus/alerts.yml, docs/operations.md "Runbook"): every
 * series they read is one /metrics exposes, and — where Prometheus's promtool is installed —
 * the rules and the scrape config pass `promtool check`, and the rules' unit tests
 * (alerts.test.yml: load shedding, trace writes failing, a broken chain, not ready, down,
 * compile failures, slow connects, client fallbacks) pass `promtool test rules`. The client
 * fallbacks' series is the voice server's own (docs/voice-server.md), and each alert's
 * runbook entry is in docs/operations.md.
 */
import { execFile } from 'node:child_process';
import { copyFile, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { PROJECT_ROOT } from '../../src/config.js';
import { buildTestApp, tempDir } from '../helpers/app.js';
import { findPromtool } from '../helpers/promtool.js';

const DIR = join(PROJECT_ROOT, 'docker/prometheus');
const run = promisify(execFile);
/** Series Prometheus makes itself, not the service. */
const PROMETHEUS_OWN = new Set(['up']);
/** Series the voice server exports from the client (`fallbackCounts()`), as docs/voice-server.md shows: not on the service's /metrics. */
const VOICE_SERVER_OWN = new Set(['cc_client_fallbacks_total']);

interface Rule {
  alert: string;
  expr: string;
}

async function rules(): Promise<Rule[]> {
  const file = parse(await readFile(join(DIR, 'alerts.yml'), 'utf8')) as { groups: Array<{ rules: Rule[] }> };
  return file.groups.flatMap((group) => group.rules);
}

describe('alert rules', () => {
  it('read only series the service exposes on /metrics (or Prometheus’s own up)', async () => {
    const { app } = await buildTestApp();
    const metrics = await app.inject('/metrics');
    expect(metrics.statusCode).toBe(200);
    const types = new Map([...metrics.body.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((match) => [match[1]!, match[2]!]));
    const missing: string[] = [];
    const found = await rules();
    expect(found.map((rule) => rule.alert)).toEqual(
      expect.arrayContaining([
        'ContextCompilerSheddingLoad',
        'ContextCompilerTraceWritesFailing',
        'ContextCompilerTraceChainBroken',
        'ContextCompilerNotReady',
        'ContextCompilerInternalErrors',
        'ContextCompilerBudgetExceeded',
        'ContextCompilerSlowConnects',
        'ContextCompilerClientStaticFallbacks',
        'ContextCompilerClientStaleFallbacks',
      ]),
    );
    for (const rule of found) {
      const series = [...rule.expr.matchAll(/\b(cc_[a-z0-9_]+|nodejs_[a-z0-9_]+|process_[a-z0-9_]+|up)\b/g)].map((match) => match[1]!);
      expect(series.length, rule.alert).toBeGreaterThan(0);
      for (const name of series) {
        const histogram = /^(.*)_(bucket|sum|count)$/.exec(name);
        const known = PROMETHEUS_OWN.has(name) || VOICE_SERVER_OWN.has(name) || types.has(name) || (histogram !== null && types.get(histogram[1]!) === 'histogram');
        if (!known) missing.push(`${rule.alert}: ${name}`);
      }
    }
    expect(missing).toEqual([]);
    // The voice server's series is the one its docs tell it to export, with the labels the rules read.
    const voiceServer = await readFile(join(PROJECT_ROOT, 'docs/voice-server.md'), 'utf8');
    expect(voiceServer).toContain("name: 'cc_client_fallbacks_total'");
    expect(voiceServer).toContain("labelNames: ['persona', 'source', 'reason']");
    // Every alert's runbook entry exists.
    const operations = await readFile(join(PROJECT_ROOT, 'docs/operations.md'), 'utf8');
    const anchors = new Set([...operations.matchAll(/^#{2,4} (.+)$/gm)].map((match) => match[1]!.toLowerCase().replace(/[^a-z0-9 -]/g, '').replaceAll(' ', '-')));
    const runbooks = (parse(await readFile(join(DIR, 'alerts.yml'), 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; annotations: { runbook_url: string } }> }> }).groups.flatMap((group) => group.rules);
    expect(runbooks.filter((rule) => !anchors.has(rule.annotations.runbook_url.replace('docs/operations.md#', ''))).map((rule) => rule.alert)).toEqual([]);
    for (const rule of runbooks) expect(operations, rule.alert).toContain(`\`${rule.alert}\``);
    // Readiness is scraped check by check, as /readyz answers it.
    expect(metrics.body).toMatch(/^cc_ready\{check="brain"\} 1$/m);
    expect(metrics.body).toMatch(/^cc_ready\{check="traces"\} 1$/m);
    expect(metrics.body).toMatch(/^cc_trace_chain_breaks_total 0$/m);
  });

  const promtool = findPromtool();
  describe.skipIf(promtool.skipped !== null)(`with promtool${promtool.skipped ? ` (SKIPPED: ${promtool.skipped})` : ''}`, () => {
    it('pass promtool check rules, their unit tests, and the scrape config that loads them', async () => {
      const checked = await run(promtool.path!, ['check', 'rules', join(DIR, 'alerts.yml')]);
      expect(checked.stdout).toMatch(/SUCCESS: \d+ rules found/);
      const tested = await run(promtool.path!, ['test', 'rules', join(DIR, 'alerts.test.yml')]);
      expect(`${tested.stdout}${tested.stderr}`).toContain('SUCCESS');
      // The config names a token file that only exists where Prometheus runs: checked against a stand-in.
      const dir = await tempDir('cc-prometheus-');
      const token = join(dir, 'token');
      await writeFile(token, 'a-scrape-token-0123456789', { mode: 0o600 });
      const config = (await readFile(join(DIR, 'prometheus.yml'), 'utf8')).replaceAll('/etc/prometheus/secrets/context-compiler-token', token);
      await writeFile(join(dir, 'prometheus.yml'), config);
      await copyFile(join(DIR, 'alerts.yml'), join(dir, 'alerts.yml'));
      const config_ = await run(promtool.path!, ['check', 'config', join(dir, 'prometheus.yml')]);
      expect(`${config_.stdout}${config_.stderr}`).toMatch(/SUCCESS: 12 rules found/);
    });
  });
});
