/**
 * What chaining adds to an append (a script, not a test): CPU per event line of building it
 * without a chain, and with a SHA-256 or an HMAC-SHA256 link, for an event line of the size
 * trace-bench.ts writes (≈ 3.4 KB).
 *
 *   node --import tsx bench/chain-bench.ts [events=200000]
 */
import { createChainSigner, GENESIS_LINK, sealText, type ChainSigner } from '../src/io/trace/chain.js';

const events = Number(process.argv[2] ?? 200_000);
const body = `{"t":"event","event":${JSON.stringify({ runId: 'bench-123456', at: new Date(0).toISOString(), refs: 'r'.repeat(3300) })}`;

function cpuPerEvent(each: () => void): number {
  const before = process.cpuUsage();
  for (let i = 0; i < events; i++) each();
  const used = process.cpuUsage(before);
  return Number(((used.user + used.system) / events).toFixed(2));
}

function chained(signer: ChainSigner): () => void {
  let link = GENESIS_LINK;
  return () => {
    const bytes = Buffer.from(body);
    const next = signer.link(link, bytes);
    Buffer.from(sealText(link, next));
    link = next;
  };
}

// One warm-up round each, so the JIT has settled before the measured one.
const unchained = () => Buffer.from(`${body}}\n`);
const sha = chained(createChainSigner());
const hmac = chained(createChainSigner('k'.repeat(40)));
for (const each of [unchained, sha, hmac]) cpuPerEvent(each);
process.stdout.write(
  `${JSON.stringify({ eventBytes: Buffer.byteLength(body), cpuUsPerEvent: { unchained: cpuPerEvent(unchained), sha256: cpuPerEvent(sha), hmacSha256: cpuPerEvent(hmac) } }, null, 2)}\n`,
);
