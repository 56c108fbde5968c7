/** vitest setupFiles: runs before every test file, so each file's tests get what its helpers need first and undo what they made (test/helpers/cleanups.ts). */
import { afterEach, beforeAll } from 'vitest';
import { runCleanups, runFileSetups } from './cleanups.js';

// Generous: on a busy machine the first build of dist/ (tsc and the viewer) can take minutes, and the other files wait for it.
beforeAll(runFileSetups, 600_000);
afterEach(runCleanups);
