/** Loopback addresses for tests that need a port no server holds. */
import { createServer, type AddressInfo } from 'node:net';

/** A loopback port just released: nothing listens on it until the test starts something there. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The base URL of a service that is down: an address nothing listens on. */
export async function downService(): Promise<string> {
  return `http://127.0.0.1:${await freePort()}`;
}
