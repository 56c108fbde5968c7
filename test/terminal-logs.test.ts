import { describe, expect, it } from 'vitest';
import { terminalDestination } from '../src/terminal-logs.js';

describe('terminalDestination', () => {
  it('keeps JSON lines when stdout is not a terminal, without loading pino-pretty', async () => {
    let loaded = false;
    const load = async () => {
      loaded = true;
      return import('pino-pretty');
    };
    expect(await terminalDestination({ isTTY: false }, load)).toBeUndefined();
    expect(await terminalDestination({}, load)).toBeUndefined();
    expect(loaded).toBe(false);
  });

  it('keeps JSON lines in a terminal where pino-pretty is not installed (the image: npm ci --omit=dev)', async () => {
    const missing = async () => {
      throw Object.assign(new Error("Cannot find package 'pino-pretty'"), { code: 'ERR_MODULE_NOT_FOUND' });
    };
    expect(await terminalDestination({ isTTY: true }, missing)).toBeUndefined();
    const broken = async () => {
      throw new Error('broken install');
    };
    await expect(terminalDestination({ isTTY: true }, broken)).rejects.toThrow('broken install');
  });

  it('writes pretty lines in a terminal where it is installed', async () => {
    const destination = await terminalDestination({ isTTY: true });
    expect(destination).toBeDefined();
    expect(typeof destination!.write).toBe('function');
  });
});
