const BITS_PER_RUN = 20;
const PROBES = 14;

/**
 * A Bloom filter of run ids: 20 bits and 14 probes per run, about 0.007 % false positives —
 * few enough that an append checking a run's owner (a run id never seen) rarely reads an
 * evicted file it does not need, even with a week of files.
 */
export class RunIdFilter {
  private readonly bits: Uint8Array;
  private readonly size: number;

  constructor(runIds: Iterable<string>, count: number) {
    this.size = Math.max(64, count * BITS_PER_RUN);
    this.bits = new Uint8Array(Math.ceil(this.size / 8));
    for (const runId of runIds) for (const bit of this.positions(runId)) this.bits[bit >> 3]! |= 1 << (bit & 7);
  }

  mayContain(runId: string): boolean {
    for (const bit of this.positions(runId)) if ((this.bits[bit >> 3]! & (1 << (bit & 7))) === 0) return false;
    return true;
  }

  private positions(runId: string): number[] {
    // Two FNV-1a hashes (different offsets), combined as h1 + i·h2 for PROBES probes.
    let h1 = 0x811c9dc5;
    let h2 = 0x01000193;
    for (let i = 0; i < runId.length; i++) {
      const code = runId.charCodeAt(i);
      h1 = Math.imul(h1 ^ code, 0x01000193);
      h2 = Math.imul(h2 ^ code, 0x5bd1e995);
    }
    h2 |= 1;
    const out: number[] = [];
    for (let i = 0; i < PROBES; i++) out.push(((h1 + Math.imul(i, h2)) >>> 0) % this.size);
    return out;
  }
}
