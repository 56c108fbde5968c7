import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { createBrain, ROOT_UNREADABLE, type Brain, type BrainFs } from '../io/brain.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The brain reader (BRAIN_ROOT): confined, bounded, stat-revalidated reads for every route. */
    brain: Brain;
  }
}

/** Why the brain root cannot serve, for `/readyz`; resolves when it can. */
async function brainReadable(root: string): Promise<void> {
  const info = await stat(root).catch((error: NodeJS.ErrnoException) => {
    throw new Error(`brain root ${error.code === 'ENOENT' ? 'does not exist' : 'cannot be read'} (BRAIN_ROOT)`);
  });
  if (!info.isDirectory()) throw new Error('brain root is not a directory (BRAIN_ROOT)');
  await access(root, constants.R_OK | constants.X_OK).catch(() => {
    throw new Error(`${ROOT_UNREADABLE.detail} (BRAIN_ROOT)`);
  });
}

/** `app.brain` over `config.brainRoot`, keeping what it reads in the cache set's `brain` areas; `/readyz` checks the root. */
export const brainPlugin = fp(
  async function brainPlugin(app: FastifyInstance, options: { fs?: BrainFs }) {
    const brain = createBrain(app.config.brainRoot, app.log.child({ component: 'brain' }), {
      cache: app.caches.brain,
      revalidate: app.config.brainRevalidate,
      maxListingEntries: app.config.brainListingMaxEntries,
      ...(options.fs ? { fs: options.fs } : {}),
    });
    app.decorate('brain', brain);
    app.readinessChecks.push({ name: 'brain', check: () => brainReadable(app.config.brainRoot) });
  },
  { name: 'brain', dependencies: ['caches'] },
);
