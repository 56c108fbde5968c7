/**
 * What the persona and worker sources remember between requests: the named, typed areas
 * each declares beside the keys it files its values under (`READING_AREAS` in
 * persona/reading.ts, `DAY_AREAS` in persona/day.ts, `WORKER_AREAS` in worker/request.ts,
 * ...). `SOURCE_AREAS` is all of them, for `createCaches`; `NO_SOURCE_MEMO` remembers nothing.
 */
import { joinAreas, noMemos } from '../core/area.js';
import { NO_TIME_MEMO } from '../core/time.js';
import { DAY_AREAS } from './persona/day.js';
import { READING_AREAS } from './persona/reading.js';
import { REFRESH_AREAS } from './persona/refresh.js';
import { TOPIC_AREAS } from './persona/topic.js';
import type { PersonaMemo } from './persona.js';
import { REPLAY_AREAS } from './replay.js';
import { HEARTBEAT_AREAS } from './timezone.js';
import { WORKER_AREAS } from './worker/request.js';
import type { WorkerMemo } from './worker.js';

/** Every area of the sources, each slot once (personas and workers share `heartbeats` and `policyKeys`). */
export const SOURCE_AREAS = joinAreas(HEARTBEAT_AREAS, REPLAY_AREAS, READING_AREAS, TOPIC_AREAS, DAY_AREAS, REFRESH_AREAS, WORKER_AREAS);

export type SourceMemo = PersonaMemo & WorkerMemo;

export const NO_SOURCE_MEMO: SourceMemo = Object.freeze({ ...noMemos(SOURCE_AREAS), time: NO_TIME_MEMO });
