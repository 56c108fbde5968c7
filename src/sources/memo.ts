/**
 * What the persona and worker sources remember between requests: the named, typed areas
 * each declares beside the keys it files its values under (`PersonaMemo` in persona.ts,
 * `WorkerMemo` in worker.ts, `HeartbeatMemo` in timezone.ts). `createCaches` makes one area
 * per slot; `NO_SOURCE_MEMO` remembers nothing.
 */
import { NO_PERSONA_MEMO, type PersonaMemo } from './persona.js';
import { NO_WORKER_MEMO, type WorkerMemo } from './worker.js';

export interface SourceMemo extends PersonaMemo, WorkerMemo {}

export const NO_SOURCE_MEMO: SourceMemo = Object.freeze({ ...NO_PERSONA_MEMO, ...NO_WORKER_MEMO });
