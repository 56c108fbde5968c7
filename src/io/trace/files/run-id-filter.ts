const BITS_PER_ID = 20;
const PROBES = 14;

/**
 * A Bloom filter of ids: 20 bits and 14 probes per id, about 0.007 % false positives — few
 * enough that an append checking a run's owner (a run id never seen) or a listing looking
 * for a request id rarely reads an evicted file it does not need, even with a week of files.
 * Never a false negative. An evicted trace file keeps one over its run ids, request ids and
 * trace ids, each under its own prefix (`idKey`).
 */
export class IdFilter {
  private readonly bits: Uint8Array;
  private readonly size: number;

  constructor(ids: Iterable<string>, count: number) {
    this.size = Math.max(64, count * BITS_PER_ID);
    this.bits = new Uint8Array(Math.ceil(this.size / 8));
    for (const id of ids) for (const bit of this.positions(id)) this.bits[bit >> 3]! |= 1 << (bit & 7);
  }

  /** Bytes the filter holds. */
  get bytes(): number {
    return this.bits.length;
  }

  mayContain(id: string): boolean {
    for (const bit of this.positions(id)) if ((this.bits[bit >> 3]! & (1 << (bit & 7))) === 0) return false;
    return true;
  }

  private positions(id: string): number[] {
    // Two FNV-1a hashes (different offsets), combined as h1 + i·h2 for PROBES probes.
    let h1 = 0x811c9dc5;
    let h2 = 0x01000193;
    for (let i = 0; i < id.length; i++) {
      const code = id.charCodeAt(i);
      h1 = Math.imul(h1 ^ code, 0x01000193);
      h2 = Math.imul(h2 ^ code, 0x5bd1e995);
    }
    h2 |= 1;
    const out: number[] = [];
    for (let i = 0; i < PROBES; i++) out.push(((h1 + Math.imul(i, h2)) >>> 0) % this.size);
    return out;
  }
}

/** What an id filter holds an id as: `r:` a run id, `q:` a request id, `t:` a trace id. */
export function idKey(kind: 'run' | 'request' | 'trace', id: string): string {
  return `${kind === 'run' ? 'r' : kind === 'request' ? 'q' : 't'}:${id}`;
}
