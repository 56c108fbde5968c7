import { pino } from 'pino';
import type { Config } from '../config.js';
import { mergePolicy, DEFAULT_POLICY } from '../core/policy.js';
import { parseInstant } from '../core/time.js';
import { ProblemError } from '../errors.js';
import { createBrain } from '../io/brain.js';
import { compilePersona, readPersonaSources } from '../sources/persona.js';
import { isSlug } from '../../schemas/ids.js';

export interface PersonaCommand {
  persona: string;
  topicId?: string;
  now?: string;
  timezone?: string;
  sanitize?: 'ascii';
}

/**
 * Compiles a persona's prompt in process, exactly as `GET /context/:persona` would, for a
 * person at a terminal. Nothing is traced: no prompt leaves a service.
 */
export async function compilePersonaInProcess(config: Config, command: PersonaCommand) {
  for (const [flag, value] of [
    ['--persona', command.persona],
    ['--topic', command.topicId],
  ] as const) {
    if (value !== undefined && !isSlug(value)) {
      throw new ProblemError('CC_UNSAFE_ID', `${flag} must be a slug ([a-z0-9] then [a-z0-9-], at most 128 characters)`);
    }
  }
  if (command.now !== undefined && !parseInstant(command.now)) {
    throw new ProblemError('CC_VALIDATION_FAILED', '--now must be an ISO 8601 date and time with Z or an offset, such as 2026-11-30T17:30:00Z');
  }
  const brain = createBrain(config.brainRoot, pino({ level: 'silent' })).session();
  const sources = await readPersonaSources(
    brain,
    {
      persona: command.persona,
      now: command.now ?? new Date().toISOString(),
      timezone: command.timezone,
      topicId: command.topicId,
      sanitize: command.sanitize,
    },
    {
      defaultTimeZone: config.defaultTimezone,
      policy: mergePolicy(DEFAULT_POLICY, { limitChars: config.promptLimitChars }),
      allowWriteTools: config.voiceWriteTools,
      crossLingual: config.voiceCrossLingual,
    },
  );
  const { compiled, extra } = compilePersona(sources);
  const { segments: _segments, ...result } = compiled;
  return { persona: sources.persona.key, ...result, ...extra, warnings: [...sources.warnings, ...compiled.warnings], sources: brain.sources() };
}
