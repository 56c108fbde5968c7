/**
 * The texts the compiler writes itself (the clock line, capabilities, connections, a
 * briefing item, the built-in runtime policy and scopes) and the checks of a compile's
 * input that name the field at fault (the clock, the phase rules).
 */
import { ProblemError } from '../../errors.js';
import { singleLine } from '../render.js';
import { RUNTIME_POLICY, RUNTIME_POLICY_SOURCE, RUNTIME_POLICY_TOOL_USE, RUNTIME_POLICY_TOOL_USE_SOURCE, RUNTIME_SCOPES } from '../surfaces.js';
import { clockLine, type Clock, type TimeMemo } from '../time.js';
import { isValidTimeZone } from '../zones.js';
import type { BriefingItem, Capability, CompileInput, Connection, Phase, SourceText } from '../types.js';

/** The volatile date-and-time line, or a 400 problem naming the field that cannot give one. */
export function clockText(clock: Clock, memo: TimeMemo): string {
  if (!(clock.now instanceof Date) || Number.isNaN(clock.now.getTime())) {
    throw new ProblemError('CC_VALIDATION_FAILED', 'now must be an ISO 8601 date and time with Z or an offset, such as 2026-11-30T17:20:00Z.', {
      errors: [{ path: '/now', message: 'not an ISO 8601 date-time' }],
    });
  }
  if (!isValidTimeZone(clock.timeZone, memo)) {
    throw new ProblemError('CC_VALIDATION_FAILED', 'timezone must be an IANA time zone such as UTC or Europe/London.', {
      errors: [{ path: '/timezone', message: 'unknown time zone' }],
    });
  }
  return clockLine(clock.now, clock.timeZone, memo);
}

export function capabilitiesText(capabilities: readonly Capability[] | undefined): string {
  if (!capabilities || capabilities.length === 0) return '';
  const lines = capabilities
    .map((capability) => ({ id: singleLine(capability.id, 128), description: singleLine(capability.description, 1000) }))
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : a.description < b.description ? -1 : a.description > b.description ? 1 : 0))
    .map(({ id, description }) => (description ? `- ${id}: ${description}` : `- ${id}`));
  return `Tools you may call in this turn:\n${lines.join('\n')}`;
}

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The connections block: each service by name with its hosts, methods and stand-in
 * variable, sorted by name (hosts sorted, methods in a fixed order) so the order of the
 * file does not change the prompt. Empty for no services: no block beats an empty promise.
 */
export function connectionsText(services: readonly Connection[] | undefined): string {
  if (!services || services.length === 0) return '';
  const lines = services
    .map((service) => ({ service, name: singleLine(service.name, 64) }))
    .sort((a, b) => byText(a.name, b.name))
    .map(({ service, name }) => {
      const hosts = service.hosts.map((host) => singleLine(host, 253)).sort(byText);
      const rank = (method: string) => (METHOD_ORDER.includes(method) ? METHOD_ORDER.indexOf(method) : METHOD_ORDER.length);
      const methods = service.methods.map((method) => singleLine(method, 16)).sort((a, b) => rank(a) - rank(b) || byText(a, b));
      const usage = service.usage === undefined ? '' : singleLine(service.usage, 500);
      return `- ${name}: hosts ${hosts.join(', ')}; methods ${methods.join(', ')}; env ${singleLine(service.env, 64)}${usage ? `. Use: ${usage}` : ''}`;
    });
  return (
    'Services you can act on through your tools, and nothing else. A call to one of them carries the environment ' +
    'variable named here, which stands in for its credential: you never see, need or ask for the credential itself.\n' +
    lines.join('\n')
  );
}

export function briefingText(item: BriefingItem): string {
  return `${singleLine(item.kind, 64)} ${singleLine(item.id, 128)} [${singleLine(item.state, 64)}]: ${singleLine(item.intent, 2000)}`;
}

/**
 * The phase rules: `start` may carry a task but no message; `turn` carries exactly
 * one message and no task. Each broken rule names its field; the request schema reports
 * them all, `compile` throws the first.
 */
export function phaseIssues(input: { phase: Phase; task?: unknown; message?: unknown }): Array<{ field: 'message' | 'task'; message: string }> {
  const issues: Array<{ field: 'message' | 'task'; message: string }> = [];
  if (input.phase === 'start' && input.message !== undefined) issues.push({ field: 'message', message: 'phase "start" may not carry a message' });
  if (input.phase === 'turn') {
    if (input.message === undefined) issues.push({ field: 'message', message: 'phase "turn" needs exactly one message' });
    if (input.task !== undefined) issues.push({ field: 'task', message: 'phase "turn" may not carry a task' });
  }
  return issues;
}

export function checkPhase(input: CompileInput): void {
  const [issue] = phaseIssues(input);
  if (issue === undefined) return;
  const path = `/${issue.field}`;
  throw new ProblemError('CC_VALIDATION_FAILED', `${path}: ${issue.message}`, { errors: [{ path, message: issue.message }] });
}

export const RUNTIME_SCOPE_SOURCES = Object.fromEntries(
  Object.entries(RUNTIME_SCOPES).map(([surface, text]) => [surface, Object.freeze({ source: `builtin:surface/${surface}`, text })]),
) as Record<string, SourceText>;

export const BUILTIN_RUNTIME_POLICY: SourceText = Object.freeze({ source: RUNTIME_POLICY_SOURCE, text: RUNTIME_POLICY });
export const BUILTIN_RUNTIME_POLICY_TOOL_USE: SourceText = Object.freeze({ source: RUNTIME_POLICY_TOOL_USE_SOURCE, text: RUNTIME_POLICY_TOOL_USE });
