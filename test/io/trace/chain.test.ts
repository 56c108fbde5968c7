import { describe, expect, it } from 'vitest';
import { chainKeyId, createChainSigner, GENESIS_LINK, SEAL_BYTES, sealText, type Predecessor } from '../../../src/io/trace/chain.js';
import { ChainWalk, checkSuccession, readerFor, summarizeRun, unseal } from '../../../src/io/trace/chain-check.js';

const KEY = 'k'.repeat(40);
const DAY = 86_400_000;

/** Records chained as a writer chains them: body, then `,"p":…,"c":…}`. */
function chained(bodies: string[], signer = createChainSigner(), from = GENESIS_LINK): Buffer[] {
  let previous = from;
  return bodies.map((body) => {
    const bytes = Buffer.from(body);
    const link = signer.link(previous, bytes);
    const line = Buffer.concat([bytes, Buffer.from(sealText(previous, link))]);
    previous = link;
    return line.subarray(0, -1);
  });
}

function walk(lines: Buffer[], signer = createChainSigner(), reader = readerFor(signer, signer.mac, signer.keyId)) {
  const chain = new ChainWalk(GENESIS_LINK, reader);
  const statuses = lines.map((line) => chain.next(unseal(line)));
  return { statuses, breaks: chain.breaks };
}

describe('links', () => {
  it('are deterministic, differ with a key, and name the key without revealing it', () => {
    const body = Buffer.from('{"t":"event","event":{"runId":"r"}');
    const plain = createChainSigner();
    const keyed = createChainSigner(KEY);
    expect(plain.link(GENESIS_LINK, body)).toBe(createChainSigner().link(GENESIS_LINK, body));
    expect(keyed.link(GENESIS_LINK, body)).toBe(createChainSigner(KEY).link(GENESIS_LINK, body));
    expect(keyed.link(GENESIS_LINK, body)).not.toBe(plain.link(GENESIS_LINK, body));
    expect(createChainSigner('x'.repeat(40)).link(GENESIS_LINK, body)).not.toBe(keyed.link(GENESIS_LINK, body));
    expect(keyed).toMatchObject({ mac: 'hmac-sha256', keyId: chainKeyId(KEY) });
    expect(keyed.keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(plain).toMatchObject({ mac: 'sha256', keyId: null });
  });

  it('seal a record with a fixed-size tail that unseals to the same parts, and nothing else unseals', () => {
    const [line] = chained(['{"t":"event","event":{"a":1}']);
    const sealed = unseal(line!)!;
    expect(line!.length - sealed.body.length).toBe(SEAL_BYTES);
    expect(JSON.parse(line!.toString())).toMatchObject({ event: { a: 1 }, p: GENESIS_LINK, c: sealed.link });
    expect(unseal(Buffer.from('{"t":"event","event":{"a":1}}'))).toBeNull();
    expect(unseal(Buffer.from(line!.toString().replace(/"c":"[0-9a-f]/, '"c":"X')))).toBeNull();
  });
});

describe('a chain walk', () => {
  const bodies = ['{"t":"event","event":{"n":1}', '{"t":"event","event":{"n":2}', '{"t":"event","event":{"n":3}'];

  it('accepts an intact chain: linked without a key, signed with one', () => {
    expect(walk(chained(bodies))).toEqual({ statuses: ['linked', 'linked', 'linked'], breaks: [] });
    const signer = createChainSigner(KEY);
    expect(walk(chained(bodies, signer), signer)).toEqual({ statuses: ['signed', 'signed', 'signed'], breaks: [] });
  });

  it('marks an edited record broken, and only it', () => {
    const lines = chained(bodies);
    lines[1] = Buffer.from(lines[1]!.toString().replace('"n":2', '"n":9'));
    expect(walk(lines)).toEqual({ statuses: ['linked', 'broken', 'linked'], breaks: [] });
  });

  it('finds a removed record and a reordering as breaks, though each record holds its own link', () => {
    const lines = chained(bodies);
    expect(walk([lines[0]!, lines[2]!])).toEqual({ statuses: ['linked', 'linked'], breaks: [1] });
    expect(walk([lines[1]!, lines[0]!, lines[2]!])).toEqual({ statuses: ['linked', 'linked', 'linked'], breaks: [0, 1, 2] });
  });

  it('does not let a forger without the key pass a consistent chain off as signed', () => {
    const signer = createChainSigner(KEY);
    // Every link recomputed, with the algorithm but not the key.
    const forged = chained(bodies, createChainSigner('f'.repeat(40)));
    expect(walk(forged, signer).statuses).toEqual(['broken', 'broken', 'broken']);
    expect(walk(chained(bodies), signer, readerFor(signer, 'hmac-sha256', signer.keyId)).statuses).toEqual(['broken', 'broken', 'broken']);
  });

  it('cannot check links under a key it does not hold, but still sees breaks', () => {
    const other = createChainSigner(KEY);
    const lines = chained(bodies, other);
    const reader = readerFor(createChainSigner(), 'hmac-sha256', other.keyId);
    expect(walk([lines[0]!, lines[2]!], createChainSigner(), reader)).toEqual({ statuses: ['unverifiable', 'unverifiable'], breaks: [1] });
  });

  it('marks a record without a seal broken', () => {
    const lines = chained(bodies);
    expect(walk([lines[0]!, Buffer.from('{"t":"event","event":{"n":4}}'), lines[1]!]).statuses).toEqual(['linked', 'broken', 'linked']);
  });
});

describe('a hand-over between two files of a writer', () => {
  const NOW = Date.parse('2026-03-10T00:00:00.000Z');
  const [header, event] = chained(['{"t":"file","v":3', '{"t":"event","event":{"at":"2026-03-09T00:00:00.000Z"}']);
  const bytes = header!.length + 1 + event!.length + 1;
  const claim: Predecessor = { file: 'p.jsonl', bytes, last: header!.length + 1, events: 1, newest: '2026-03-09T00:00:00.000Z' };
  const link = unseal(event!)!.link;
  const intact = { exists: true as const, bytes, lastRecord: event! };

  it('holds when the predecessor ends where the next file says it did', () => {
    expect(checkSuccession(claim, link, intact, NOW, 7 * DAY)).toEqual({ finding: null, unvouched: null });
  });

  it('accepts a predecessor gone by retention, and reports one gone within it', () => {
    expect(checkSuccession(claim, link, { exists: false }, NOW + 8 * DAY, 7 * DAY)).toEqual({ finding: null, unvouched: null });
    expect(checkSuccession(claim, link, { exists: false }, NOW, 7 * DAY).finding).toEqual({ broken: true, text: expect.stringMatching(/^p\.jsonl is missing: it held 1 events up to .*within retention/) });
  });

  it('reports a cut or altered end, unless the writer found it so and said so', () => {
    expect(checkSuccession(claim, link, { exists: true, bytes: 10, lastRecord: null }, NOW, 7 * DAY).finding).toMatchObject({ broken: true, text: expect.stringContaining('after its writer moved on') });
    expect(checkSuccession({ ...claim, found: { bytes: 10 } }, link, { exists: true, bytes: 10, lastRecord: null }, NOW, 7 * DAY).finding).toMatchObject({ broken: false });
    expect(checkSuccession({ ...claim, found: { bytes: null } }, link, { exists: false }, NOW, 7 * DAY).finding).toMatchObject({ broken: false });
    // Another last record in its place (its body is the predecessor's own chain's business).
    const [replaced] = chained(['{"t":"event","event":{"at":"2026-03-09T00:00:01.000Z"}'], createChainSigner(), unseal(header!)!.link);
    expect(checkSuccession(claim, link, { exists: true, bytes, lastRecord: replaced! }, NOW, 7 * DAY).finding).toMatchObject({ broken: true });
    expect(checkSuccession(claim, GENESIS_LINK, intact, NOW, 7 * DAY).finding).toMatchObject({ broken: true });
  });

  it('marks what follows the vouched end as unvouched', () => {
    expect(checkSuccession(claim, link, { ...intact, bytes: bytes + 500 }, NOW, 7 * DAY)).toEqual({ finding: null, unvouched: { from: bytes, text: expect.stringContaining('after the end its writer vouched for') } });
  });
});

describe('a run’s verdict', () => {
  it('is the worst event status, and broken once any problem is found', () => {
    expect(summarizeRun(['signed', 'signed'], [], { keyId: 'k' })).toEqual({ status: 'signed', problems: [], notes: [] });
    expect(summarizeRun(['signed', 'unchained', 'linked'], [{ broken: false, text: 'a note' }], { keyId: 'k' })).toEqual({ status: 'unchained', problems: [], notes: ['a note'] });
    expect(summarizeRun(['signed'], [{ broken: true, text: 'x' }, { broken: true, text: 'x' }], { keyId: 'k' })).toEqual({ status: 'broken', problems: ['x'], notes: [] });
    const many = Array.from({ length: 30 }, (_, i) => ({ broken: true, text: `p${i}` }));
    expect(summarizeRun(['linked'], many, { keyId: null }).problems).toHaveLength(21);
  });
});
