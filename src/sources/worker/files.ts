/**
 * A worker's files, one reader each: the identity (mandatory, never cut), the policy and
 * connections (parsed once per version of their bytes), the platform blueprint, the role the
 * policy admits, and the channel's purpose. A bad optional file is a warning.
 */
import { BLUEPRINT_PATH, parseBlueprint, type Blueprint } from '../../core/governance.js';
import { mergePolicy } from '../../core/policy.js';
import { schemaProblem } from '../../core/text.js';
import type { Policy, SourceText } from '../../core/types.js';
import { ProblemError } from '../../errors.js';
import type { BrainFile, BrainReader } from '../../io/brain.js';
import { ConnectionsFileSchema } from '../../../schemas/connections-file.js';
import { PolicyFileSchema, type PolicyFile } from '../../../schemas/policy.js';
import { remembered } from '../../core/memo.js';
import { policyKey } from '../replay.js';
import { CONNECTIONS_READ_BYTES, DEFAULT_GOVERNANCE, MANDATORY_READ_BYTES, POLICY_READ_BYTES, type Governance, type ParsedConnections, type ParsedPolicy, type WorkerMemo, type WorkerRequest, type WorkerSources } from './request.js';

/** A file's version and path (a warning or an index names the file). */
export function parsedFileKey(file: BrainFile): string {
  return `${file.sha256}${file.truncated ? '+' : ''}|${file.path}`;
}

/** `parsedFileKey` and the policy it was merged onto. */
function policyFileKey(file: BrainFile, base: Policy, memo: WorkerMemo): string {
  return `${parsedFileKey(file)}|${policyKey(base, memo)}`;
}


function governanceOf(file: PolicyFile): Governance {
  return { recall: file.recall ?? 'always', roles: file.roles ?? DEFAULT_GOVERNANCE.roles };
}

function parsePolicy(file: BrainFile, base: Policy): ParsedPolicy {
  let json: unknown;
  try {
    json = JSON.parse(file.text);
  } catch {
    return { warning: `${file.path} is not valid JSON; the default policy applies` };
  }
  const parsed = PolicyFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { warning: `${file.path} is invalid ${schemaProblem(issue)}; the default policy applies` };
  }
  return { policy: mergePolicy(base, parsed.data), governance: governanceOf(parsed.data) };
}

/** A mandatory brain file read whole, or the reason it cannot be used; its read warnings (invalid UTF-8) are kept. */
function mandatoryText(result: BrainFile, warnings: string[]): SourceText {
  if (result.truncated) {
    throw new ProblemError('CC_BUDGET_EXCEEDED', `${result.path} is ${result.size} bytes, more than can be read whole; it is never truncated.`, {
      extensions: { block: 'source', path: result.path, chars: result.size, limit: MANDATORY_READ_BYTES },
    });
  }
  warnings.push(...result.warnings);
  return { source: result.path, text: result.text, brainDerived: true };
}

export async function readIdentity(brain: BrainReader, worker: string, warnings: string[]): Promise<SourceText> {
  for (const name of ['identity.md', 'charter.md']) {
    const result = await brain.read(`workers/${worker}/${name}`, { maxBytes: MANDATORY_READ_BYTES });
    if (result.status === 'ok') return mandatoryText(result, warnings);
    if (result.status !== 'missing') {
      throw new ProblemError('CC_UNPROCESSABLE', `${result.path} cannot be used: ${result.reason.detail}.`, { extensions: { path: result.path } });
    }
  }
  const hint = `create workers/${worker}/identity.md in the brain (BRAIN_ROOT) saying who the worker is`;
  throw new ProblemError('CC_NOT_FOUND', `No worker "${worker}": ${hint}.`, { extensions: { hint } });
}

export async function readPolicy(
  brain: BrainReader,
  worker: string,
  base: Policy,
  memo: WorkerMemo,
  warnings: string[],
): Promise<{ policy: Policy; governance: Governance }> {
  const path = `workers/${worker}/policy.json`;
  const defaults = { policy: base, governance: DEFAULT_GOVERNANCE };
  const result = await brain.read(path, { maxBytes: POLICY_READ_BYTES });
  if (result.status === 'missing') return defaults;
  if (result.status !== 'ok') {
    warnings.push(`${path} could not be read (${result.reason.detail}); the default policy applies`);
    return defaults;
  }
  const parsed = remembered(memo.policies, policyFileKey(result, base, memo), () => parsePolicy(result, base), () => 4096);
  if ('warning' in parsed) {
    warnings.push(parsed.warning);
    return defaults;
  }
  return parsed;
}

function parseConnections(file: BrainFile): ParsedConnections {
  if (file.truncated) return { warning: `${file.path} is over ${CONNECTIONS_READ_BYTES} bytes; no connections block` };
  let json: unknown;
  try {
    json = JSON.parse(file.text);
  } catch {
    return { warning: `${file.path} is not valid JSON; no connections block` };
  }
  const parsed = ConnectionsFileSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return { warning: `${file.path} is invalid ${schemaProblem(issue)}; no connections block` };
  }
  return { services: parsed.data };
}

/** `workers/<worker>/connections.json`, validated; absent when the file is (no block beats an empty promise). */
export async function readConnections(brain: BrainReader, worker: string, memo: WorkerMemo, warnings: string[]): Promise<WorkerSources['connections']> {
  const path = `workers/${worker}/connections.json`;
  const result = await brain.read(path, { maxBytes: CONNECTIONS_READ_BYTES });
  if (result.status === 'missing') return undefined;
  if (result.status !== 'ok') {
    warnings.push(`${path} could not be read (${result.reason.detail}); no connections block`);
    return undefined;
  }
  const parsed = remembered(memo.connections, parsedFileKey(result), () => parseConnections(result), () => 4 * result.text.length + 1024);
  if ('warning' in parsed) {
    warnings.push(parsed.warning);
    return undefined;
  }
  return { source: path, services: parsed.services };
}

/** `platform/blueprint.md` with its revision; absent when the file is (the receipt then says `none`). */
export async function readBlueprint(brain: BrainReader, memo: WorkerMemo, warnings: string[]): Promise<WorkerSources['blueprint']> {
  const result = await brain.read(BLUEPRINT_PATH, { maxBytes: MANDATORY_READ_BYTES });
  if (result.status === 'missing') return undefined;
  if (result.status !== 'ok') {
    warnings.push(`${BLUEPRINT_PATH} could not be read (${result.reason.detail}); compiled without the platform blueprint`);
    return undefined;
  }
  const text = mandatoryText(result, warnings);
  const blueprint = remembered(memo.blueprints, result.sha256, (): Blueprint => parseBlueprint(text.text, result.sha256), (parsed) => 2 * parsed.body.length + 512);
  if (blueprint.warning !== undefined) warnings.push(blueprint.warning);
  return { text: { source: BLUEPRINT_PATH, text: blueprint.body, brainDerived: true }, revision: blueprint.revision };
}

/**
 * The role this run plays: the request's, which the policy must admit (else a 422 naming
 * it, before anything of it is read), else the policy's default, else none.
 */
export function chooseRole(request: WorkerRequest, governance: Governance): { id: string; selectedBy: 'request' | 'default' } | undefined {
  const { admitted } = governance.roles;
  if (request.role === undefined) return governance.roles.default === undefined ? undefined : { id: governance.roles.default, selectedBy: 'default' };
  if (!admitted.includes(request.role)) {
    const admits = admitted.length === 0 ? 'admits no role' : `admits ${admitted.join(', ')}`;
    throw new ProblemError(
      'CC_ROLE_NOT_ADMITTED',
      `Worker "${request.worker}" does not admit role "${request.role}": its policy (workers/${request.worker}/policy.json, roles.admitted) ${admits}.`,
      { extensions: { role: request.role, admitted: [...admitted] } },
    );
  }
  return { id: request.role, selectedBy: 'request' };
}

/**
 * The chosen role's file, read whole: a role the request named must exist (else a 404 naming
 * its file); the policy's default degrades to a warning when its file cannot be used.
 */
export async function readRole(
  brain: BrainReader,
  worker: string,
  chosen: { id: string; selectedBy: 'request' | 'default' } | undefined,
  warnings: string[],
): Promise<WorkerSources['role']> {
  if (chosen === undefined) return undefined;
  const { id, selectedBy } = chosen;
  const path = `workers/${worker}/roles/${id}.md`;
  const result = await brain.read(path, { maxBytes: MANDATORY_READ_BYTES });
  if (result.status === 'ok') return { id, selectedBy, text: mandatoryText(result, warnings) };
  if (selectedBy === 'default') {
    warnings.push(
      result.status === 'missing'
        ? `default role "${id}" has no file (${path}); compiled without a role`
        : `${path} could not be read (${result.reason.detail}); compiled without a role`,
    );
    return undefined;
  }
  if (result.status === 'missing') {
    throw new ProblemError('CC_NOT_FOUND', `No role "${id}" for worker "${worker}": create ${path} in the brain, or name another role.`, {
      extensions: { role: id, path },
    });
  }
  throw new ProblemError('CC_UNPROCESSABLE', `${path} cannot be used: ${result.reason.detail}.`, { extensions: { role: id, path } });
}

export async function readPurpose(brain: BrainReader, channelId: string, warnings: string[]): Promise<SourceText | undefined> {
  const result = await brain.read(`channels/${channelId}/purpose.md`, { maxBytes: MANDATORY_READ_BYTES });
  if (result.status === 'ok') return mandatoryText(result, warnings);
  warnings.push(
    result.status === 'missing'
      ? `channel "${channelId}" has no purpose (channels/${channelId}/purpose.md); compiled without one`
      : `${result.path} could not be read (${result.reason.detail}); compiled without a purpose`,
  );
  return undefined;
}

