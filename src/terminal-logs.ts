import type { DestinationStream } from 'pino';

/**
 * Where the server's log lines go: `pino-pretty` when stdout is a terminal and the package
 * is installed, else undefined (pino's JSON lines on stdout). pino-pretty is a dev
 * dependency, so the image (`npm ci --omit=dev`) never has it, and a container's or a
 * collector's stdout is not a terminal: production logs stay JSON whatever the environment.
 */
export async function terminalDestination(
  stdout: { isTTY?: boolean },
  load: () => Promise<{ default: (options: Record<string, unknown>) => DestinationStream }> = () => import('pino-pretty'),
): Promise<DestinationStream | undefined> {
  if (stdout.isTTY !== true) return undefined;
  let pretty: (options: Record<string, unknown>) => DestinationStream;
  try {
    pretty = (await load()).default;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') return undefined;
    throw error;
  }
  return pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname', destination: 1, sync: true });
}
