import { describe, expect, it } from 'vitest';
import { parseTraceparent } from '../../src/http/correlation.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';

describe('parseTraceparent (W3C Trace Context)', () => {
  it('keeps a valid version-00 header', () => {
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-01`)).toBe(`00-${TRACE}-${PARENT}-01`);
    expect(parseTraceparent(`00-${TRACE}-${PARENT}-00`)).toBe(`00-${TRACE}-${PARENT}-00`);
    expect(parseTraceparent(` 00-${TRACE}-${PARENT}-01 `)).toBe(`00-${TRACE}-${PARENT}-01`);
  });

  it('keeps the four fields of a later version, which may add fields after a dash', () => {
    expect(parseTraceparent(`01-${TRACE}-${PARENT}-01-what-comes-next`)).toBe(`01-${TRACE}-${PARENT}-01`);
    expect(parseTraceparent(`cc-${TRACE}-${PARENT}-09`)).toBe(`cc-${TRACE}-${PARENT}-09`);
  });

  it('refuses everything else: bad version, zero ids, uppercase, wrong lengths, extra fields on 00, repeated headers', () => {
    for (const bad of [
      `ff-${TRACE}-${PARENT}-01`,
      `00-${'0'.repeat(32)}-${PARENT}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${PARENT}-01`,
      `00-${TRACE}-${PARENT}-1`,
      `00-${TRACE.slice(1)}-${PARENT}-01`,
      `00-${TRACE}-${PARENT}-01-extra`,
      `00-${TRACE}-${PARENT}-01x`,
      `01-${TRACE}-${PARENT}-01x`,
      `00_${TRACE}_${PARENT}_01`,
      `00-${TRACE}-${PARENT}-01, 00-${TRACE}-${PARENT}-01`,
      `00-${TRACE}-${PARENT}-01-${'x'.repeat(600)}`,
      '',
    ]) {
      expect(parseTraceparent(bad), bad).toBeNull();
    }
    expect(parseTraceparent([`00-${TRACE}-${PARENT}-01`, `00-${TRACE}-${PARENT}-01`])).toBeNull();
    expect(parseTraceparent(undefined)).toBeNull();
  });
});
