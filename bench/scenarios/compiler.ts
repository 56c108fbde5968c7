import { access } from 'node:fs/promises';

/** The in-process compiler benchmark (`bench/compile-bench.ts`: the compiler alone, no HTTP, no file system), while the machine is idle. */
export async function measureCompiles(durationMs: number): Promise<{ compilesPerSecond: number | null; note?: string }> {
  const url = new URL('../compile-bench.js', import.meta.url);
  let module: { measureCompilesPerSecond?: (ms: number) => unknown };
  try {
    await access(url);
  } catch {
    return { compilesPerSecond: null, note: 'not available (bench/compile-bench.ts not present)' };
  }
  try {
    module = (await import(url.href)) as typeof module;
  } catch (error) {
    return { compilesPerSecond: null, note: `not available (import failed: ${(error as Error).message.split('\n')[0]})` };
  }
  if (typeof module.measureCompilesPerSecond !== 'function') {
    return { compilesPerSecond: null, note: 'not available (compile-bench exports no measureCompilesPerSecond)' };
  }
  try {
    const value = await module.measureCompilesPerSecond(durationMs);
    const rate = typeof value === 'number' ? value : (value as { compilesPerSecond?: unknown } | null)?.compilesPerSecond;
    if (typeof rate === 'number' && Number.isFinite(rate)) return { compilesPerSecond: rate };
    return { compilesPerSecond: null, note: `not available (unexpected result ${JSON.stringify(value)?.slice(0, 80)})` };
  } catch (error) {
    return { compilesPerSecond: null, note: `failed: ${(error as Error).message.split('\n')[0]}` };
  }
}
