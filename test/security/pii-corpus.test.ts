import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { scrubPii } from '../../src/core/pii.js';
import { buildTestApp, copyExampleBrain } from '../helpers/app.js';
import { NOW, readAllTraces } from '../helpers/security-harness.js';
import { SECURITY_PII_LOOK_ALIKES, SECURITY_PII_POSITIVES, type SecurityPiiSample } from '../helpers/security-pii-corpus.js';

/** The floors SECURITY.md reports; lower them only with a reason written there. */
const RECALL_FLOOR = 0.98;
const FALSE_POSITIVE_CEILING = 0.02;

/** Whether the sample's PII is gone: the exact text, every digit group it added, every `@` it added. */
function redacted(sample: SecurityPiiSample, scrubbed: string): boolean {
  if (scrubbed.includes(sample.pii)) return false;
  const template = sample.text.replace(sample.pii, '');
  const templateDigits = new Set(template.match(/[0-9０-９]+/g) ?? []);
  if ((scrubbed.match(/[0-9０-９]{2,}/g) ?? []).some((run) => !templateDigits.has(run))) return sample.kind === 'email' && !/[@＠]/.test(scrubbed);
  const ats = (text: string) => (text.match(/[@＠]|[\[({] ?at ?[\])}]/gi) ?? []).length;
  return ats(scrubbed) <= ats(template);
}

function measure() {
  const misses = SECURITY_PII_POSITIVES.filter((sample) => !redacted(sample, scrubPii(sample.text).text));
  const falsePositives = SECURITY_PII_LOOK_ALIKES.filter((text) => scrubPii(text).text !== text);
  return {
    positives: SECURITY_PII_POSITIVES.length,
    recall: (SECURITY_PII_POSITIVES.length - misses.length) / SECURITY_PII_POSITIVES.length,
    lookAlikes: SECURITY_PII_LOOK_ALIKES.length,
    falsePositiveRate: falsePositives.length / SECURITY_PII_LOOK_ALIKES.length,
    misses: misses.map((sample) => `${sample.text} -> ${scrubPii(sample.text).text}`),
    falsePositives: falsePositives.map((text) => `${text} -> ${scrubPii(text).text}`),
  };
}

describe('PII scrubbing on the adversarial corpus', () => {
  it(`keeps recall >= ${RECALL_FLOOR} and the false-positive rate <= ${FALSE_POSITIVE_CEILING}`, () => {
    const figures = measure();
    process.stdout.write(
      `PII corpus (test/helpers/security-pii-corpus.ts): recall ${figures.positives - figures.misses.length}/${figures.positives} = ${figures.recall.toFixed(3)}, ` +
        `false positives ${figures.falsePositives.length}/${figures.lookAlikes} = ${figures.falsePositiveRate.toFixed(3)}\n`,
    );
    expect(figures.positives).toBeGreaterThanOrEqual(90);
    expect(figures.lookAlikes).toBeGreaterThanOrEqual(55);
    expect(figures.recall, figures.misses.join('\n')).toBeGreaterThanOrEqual(RECALL_FLOOR);
    expect(figures.falsePositiveRate, figures.falsePositives.join('\n')).toBeLessThanOrEqual(FALSE_POSITIVE_CEILING);
  });

  it('counts one redaction of the right kind per sample', () => {
    const wrong = SECURITY_PII_POSITIVES.filter((sample) => {
      const { counts } = scrubPii(sample.text);
      return counts[sample.kind] !== 1 || counts[sample.kind === 'email' ? 'phone' : 'email'] !== 0;
    });
    expect(wrong.map((sample) => `${sample.text}: ${JSON.stringify(scrubPii(sample.text).counts)}`)).toEqual([]);
  });

  // Regression tests for forms the first corpus missed (named after what broke).
  it.each([
    ['a quoted local part', '"john smith"@example.com', '[email]'],
    ['the fullwidth at sign', 'tanaka＠example.jp', '[email]'],
    ['a slash after a German area code', '030/901820', '[phone]'],
    ['a slash after a US area code', '312/555-0142', '[phone]'],
    ['an area code in parentheses without a trunk 0', '(11) 98765-4321', '[phone]'],
    ['fullwidth digits', '０３-１２３４-５６７８', '[phone]'],
    ['a retina file name taken for an email', 'icon@2x.png', 'icon@2x.png'],
  ])('handles %s', (_what, text, expected) => {
    expect(scrubPii(`see ${text} today`).text).toBe(`see ${expected} today`);
  });

  it('keeps slash dates, fractions and paths whole now that a slash can join phone groups', () => {
    for (const text of ['due 11/30/2026 and 30/11/2026', 'ratio 1/2/3 and 24/7', 'path runs/2125550199/trace', 'dates 2026/11/30 415/555']) {
      expect(scrubPii(text).text).toBe(text);
    }
  });
});

describe('PII from brain files never leaves the service', () => {
  it('redacts every corpus sample in a brain file end to end, in the response and the trace, and keeps every look-alike', async () => {
    const root = await copyExampleBrain();
    const identity = async (worker: string, lines: string[]) => {
      await mkdir(join(root, 'workers', worker), { recursive: true });
      await writeFile(join(root, 'workers', worker, 'identity.md'), `You are a worker whose identity is full of numbers.\n${lines.join('\n')}\n`);
    };
    await identity('pii', SECURITY_PII_POSITIVES.map((sample) => sample.text));
    await identity('look-alikes', SECURITY_PII_LOOK_ALIKES);
    const { app } = await buildTestApp({ BRAIN_ROOT: root });
    const compile = (worker: string) =>
      app.inject({ method: 'POST', url: '/compile', payload: { phase: 'start', surface: 'chat', worker, now: NOW, runId: `run-${worker}` } });

    const pii = await compile('pii');
    expect(pii.statusCode).toBe(200);
    const body = pii.json();
    const emails = SECURITY_PII_POSITIVES.filter((sample) => sample.kind === 'email').length;
    expect(body.redactions).toEqual({ email: emails, phone: SECURITY_PII_POSITIVES.length - emails });
    const traces = await readAllTraces(app);
    for (const sample of SECURITY_PII_POSITIVES) {
      expect(body.systemPrompt, sample.text).not.toContain(sample.pii);
      expect(traces, sample.text).not.toContain(JSON.stringify(sample.pii).slice(1, -1));
    }

    const lookAlikes = await compile('look-alikes');
    expect(lookAlikes.statusCode).toBe(200);
    expect(lookAlikes.json().redactions).toEqual({ email: 0, phone: 0 });
    for (const text of SECURITY_PII_LOOK_ALIKES) expect(lookAlikes.json().systemPrompt).toContain(text);
  });
});
