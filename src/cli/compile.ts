import { pino } from 'pino';
import { createCaches } from '../caches.js';
import type { Config } from '../config.js';
import { createCompiler } from '../core/compile.js';
import { buildHud } from '../core/hud.js';
import { O200K_BASE } from '../tokenizer.js';
import { mergePolicy, DEFAULT_POLICY } from '../core/policy.js';
import { parseInstant } from '../core/time.js';
import { ENGINE_RULE } from '../core/types.js';
import { ProblemError } from '../errors.js';
import { createBrain } from '../io/brain.js';
import type { CompileJob } from '../sources/job.js';
import { createPersonaSources, personaOptions } from '../sources/persona.js';
import { createWorkerSources } from '../sources/worker.js';
import { CompileRequestSchema } from '../../schemas/compile.js';
import { EngineSchema, isSlug, TimeZoneSchema } from '../../schemas/ids.js';

export interface CompileCommand {
  persona?: string;
  worker?: string;
  /** Persona: a topic from `topics/<topicId>.md`. */
  topicId?: string;
  /** Worker: the channel whose purpose applies. */
  channelId?: string;
  /** Worker: a turn's message (phase `turn`). */
  message?: string;
  /** Worker: a task to start with (phase `start`). */
  task?: string;
  /** Worker: the surface (default `chat` with a channel, else `direct`). */
  surface?: string;
  /** Worker: the role to play (else the policy's default). */
  role?: string;
  /** The engine the prompt is for: enters the route key only. */
  engine?: string;
  now?: string;
  timezone?: string;
  sanitize?: 'ascii';
}

/** The flag that carries each field of a worker's request, for usage errors. */
const FLAGS: Record<string, string> = {
  worker: '--worker',
  channelId: '--channel',
  message: '--message',
  task: '--task',
  surface: '--surface',
  role: '--role',
  engine: '--engine',
  now: '--now',
  timezone: '--timezone',
  phase: '--message or --task',
};

/**
 * Compiles a persona's or a worker's prompt in process, exactly as `GET /context/:persona`
 * or `POST /compile` would (the same jobs, the same schema for a worker's request), for a
 * person at a terminal. Nothing is traced: no prompt leaves a service. A bad flag value is
 * a 400 problem naming the flag.
 */
export async function compileInProcess(config: Config, command: CompileCommand) {
  if (command.now !== undefined && !parseInstant(command.now)) {
    throw new ProblemError('CC_VALIDATION_FAILED', '--now must be an ISO 8601 date and time with Z or an offset, such as 2026-11-30T17:30:00Z');
  }
  const now = command.now === undefined ? new Date() : parseInstant(command.now)!;
  const caches = createCaches();
  const deps = { compiler: createCompiler({ memo: caches.compiler, tokenizer: O200K_BASE }), memo: caches.sources };
  const policy = mergePolicy(DEFAULT_POLICY, { limitChars: config.promptLimitChars });
  let job: CompileJob;
  let subject: Record<string, string>;
  if (command.worker !== undefined) {
    const parsed = CompileRequestSchema.safeParse({
      phase: command.message === undefined ? 'start' : 'turn',
      surface: command.surface ?? (command.channelId === undefined ? 'direct' : 'chat'),
      worker: command.worker,
      ...(command.channelId === undefined ? {} : { channelId: command.channelId }),
      ...(command.message === undefined ? {} : { message: command.message }),
      ...(command.task === undefined ? {} : { task: command.task }),
      ...(command.role === undefined ? {} : { role: command.role }),
      ...(command.engine === undefined ? {} : { engine: command.engine }),
      ...(command.timezone === undefined ? {} : { timezone: command.timezone }),
    });
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const field = String(issue.path[0] ?? 'worker');
      throw new ProblemError('CC_VALIDATION_FAILED', `${FLAGS[field] ?? field}: ${issue.message}`);
    }
    const { runId: _runId, now: _now, ...request } = parsed.data;
    job = createWorkerSources({ policy, defaultTimeZone: config.defaultTimezone }, deps).job({ ...request, now });
    subject = { worker: request.worker };
  } else {
    const persona = command.persona ?? '';
    for (const [flag, value] of [
      ['--persona', persona],
      ['--topic', command.topicId],
    ] as const) {
      if (value !== undefined && !isSlug(value)) {
        throw new ProblemError('CC_UNSAFE_ID', `${flag} must be a slug ([a-z0-9] then [a-z0-9-], at most 128 characters)`);
      }
    }
    // The persona routes fail open on an unusable zone; a flag typed by hand is better refused.
    if (command.timezone !== undefined && !TimeZoneSchema.safeParse(command.timezone).success) {
      throw new ProblemError('CC_VALIDATION_FAILED', '--timezone must be an IANA time zone such as UTC or Europe/London');
    }
    if (command.engine !== undefined && !EngineSchema.safeParse(command.engine).success) {
      throw new ProblemError('CC_VALIDATION_FAILED', `--engine must be ${ENGINE_RULE}`);
    }
    const personas = createPersonaSources(personaOptions(config), deps);
    job = personas.persona({ persona, now, timezone: command.timezone, topicId: command.topicId, sanitize: command.sanitize, engine: command.engine });
    subject = { persona };
  }
  const brain = createBrain(config.brainRoot, pino({ level: 'silent' }), { cache: caches.brain, revalidate: config.brainRevalidate }).session();
  const found = await job.read(brain);
  const { compiled, extra } = found.compile();
  const { segments: _segments, prompt: _prompt, ...result } = compiled;
  const hud = buildHud({ loaded: brain.loaded(), missing: brain.absent(), blocks: compiled.blocks, budget: compiled.budget });
  return { ...subject, ...result, ...extra, warnings: [...found.warnings, ...compiled.warnings], sources: brain.sources(), hud };
}
