/**
 * The client, as this package has always exported it (`context-compiler/client`). Its one
 * source is the client package, `packages/client/` (`@context-compiler/client`), which a
 * voice server installs alone: undici is its only dependency.
 */
export * from '../packages/client/src/index.js';
