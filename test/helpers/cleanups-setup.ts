/** vitest setupFiles: runs before every test file, so each file's tests undo what they made (test/helpers/cleanups.ts). */
import { afterEach } from 'vitest';
import { runCleanups } from './cleanups.js';

afterEach(runCleanups);
