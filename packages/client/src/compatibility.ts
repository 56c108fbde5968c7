/**
 * The service release this client was built for, by major version: a service of another
 * major may have changed what it answers. A test keeps it equal to the service's own
 * package.json major.
 */
export const SERVICE_MAJOR = 0;

/** Where the client's warnings go: any object with `warn(message, details)`, e.g. `console` or a pino logger bound as `{ warn: (m, d) => log.warn(d, m) }`. */
export interface ClientLogger {
  warn(message: string, details?: Record<string, unknown>): void;
}

/**
 * Watches `x-context-compiler-version` on every answer and warns once, through `logger`
 * (else Node's `process.emitWarning`), the first time the service's major version is not
 * `SERVICE_MAJOR`. An answer without the header (an older service, a proxy's own page) says
 * nothing.
 */
export function createVersionCheck(logger: ClientLogger | undefined): (version: string | null) => void {
  let warned = false;
  return (version) => {
    if (warned || version === null) return;
    const major = Number(version.split('.', 1)[0]);
    if (!Number.isInteger(major) || major === SERVICE_MAJOR) return;
    warned = true;
    const message = `context-compiler ${version} answers this client, which was built for a ${SERVICE_MAJOR}.x service: upgrade @context-compiler/client to a release for ${major}.x`;
    const details = { serviceVersion: version, builtForMajor: SERVICE_MAJOR };
    if (logger) logger.warn(message, details);
    else process.emitWarning(message, { code: 'CONTEXT_COMPILER_VERSION' });
  };
}
