/**
 * What makes a worker's context governable (docs/compiler.md "Governance"): the
 * recall policy, the platform blueprint's revision and the receipts of what shaped a
 * prompt. Pure: the sources layer reads the files, these functions decide and describe.
 */
import { appliedPreferences } from './surfaces.js';
import type { CompiledContext, Preferences } from './types.js';

/** `policy.json` `recall`: `always` (the default) recalls memory notes on every run; `clean-room` only on runs with interaction context. */
export const RECALL_POLICIES = ['always', 'clean-room'] as const;
export type RecallPolicy = (typeof RECALL_POLICIES)[number];

/** The request fields that make a run carry interaction context, in this order. */
export const INTERACTION_FIELDS = ['message', 'channelId', 'evidence'] as const;
export type InteractionField = (typeof INTERACTION_FIELDS)[number];

export interface RecallDecision {
  policy: RecallPolicy;
  /** The fields that made this run an interaction; empty for a clean run. */
  interactionContext: InteractionField[];
  /** True when memory notes were not recalled (nor read) because the run is clean and the worker clean-room. */
  suppressed: boolean;
}

/**
 * Whether a worker recalls its memory notes on this run. A run carries interaction context
 * when the request has a `message` (what a person said this turn), a `channelId` (a
 * conversation others take part in) or at least one `evidence` item (recalled material the
 * host vouches for); a run with none of them — a queued task, or a start with only a task —
 * is clean. A clean-room worker recalls nothing on a clean run, so what a person once said
 * never rides into what it writes unattended; every other run recalls as usual.
 */
export function decideRecall(policy: RecallPolicy, request: { message?: unknown; channelId?: unknown; evidence?: readonly unknown[] | undefined }): RecallDecision {
  const interactionContext: InteractionField[] = [];
  if (request.message !== undefined) interactionContext.push('message');
  if (request.channelId !== undefined) interactionContext.push('channelId');
  if (request.evidence !== undefined && request.evidence.length > 0) interactionContext.push('evidence');
  return { policy, interactionContext, suppressed: policy === 'clean-room' && interactionContext.length === 0 };
}

/** The path of the platform blueprint in the brain. */
export const BLUEPRINT_PATH = 'platform/blueprint.md';
/** A revision named in front matter: a bounded token such as `2026.11`, `r42` or `v3-rc1`. */
export const REVISION_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:+-]{0,63}$/;
/** The receipt's revision when there is no blueprint block. */
export const NO_BLUEPRINT = 'none';

export interface Blueprint {
  /** From front matter `revision:`, else `sha256:` and the first 16 hex of the file's sha256. */
  revision: string;
  revisionFrom: 'front-matter' | 'sha256';
  /** The text after the front matter: what the blueprint block holds. */
  body: string;
  /** Set when front matter names a revision that is not a bounded token (the digest is used instead). */
  warning?: string;
}

const FRONT_MATTER = /^---[ \t]*\n([\s\S]*?)\n---[ \t]*(?:\n|$)/;

const isBlank = (code: number) => code === 0x20 || code === 0x09;
const isLineTerminator = (code: number) => code === 0x0a || code === 0x0d || code === 0x2028 || code === 0x2029;

/**
 * The value of the first `revision:` line of front matter, blank space around it trimmed and
 * one pair of matching quotes removed; undefined without one. One scan: the pattern it replaces
 * (`/^revision:[ \t]*(.*?)[ \t]*$/m`) backtracked quadratically on a long run of spaces (issue 27).
 */
export function frontMatterRevision(frontMatter: string): string | undefined {
  let lineStart = 0;
  while (lineStart <= frontMatter.length) {
    let lineEnd = lineStart;
    while (lineEnd < frontMatter.length && !isLineTerminator(frontMatter.charCodeAt(lineEnd))) lineEnd++;
    if (frontMatter.startsWith('revision:', lineStart)) {
      let start = lineStart + 'revision:'.length;
      let end = lineEnd;
      while (start < end && isBlank(frontMatter.charCodeAt(start))) start++;
      while (end > start && isBlank(frontMatter.charCodeAt(end - 1))) end--;
      const value = frontMatter.slice(start, end);
      const quote = value[0];
      return value.length >= 2 && (quote === '"' || quote === "'") && value.endsWith(quote) ? value.slice(1, -1) : value;
    }
    lineStart = lineEnd + 1;
  }
  return undefined;
}

/**
 * Splits `platform/blueprint.md` into its revision and its body. Front matter is a first
 * line `---`, `key: value` lines, and a closing `---`; it is never part of the block. Its
 * `revision:` (quotes allowed) names the revision when it is a bounded token; otherwise the
 * revision is the file's digest (`sha256:` + 16 hex), so every blueprint has one.
 * Deterministic: the same bytes give the same revision and body.
 */
export function parseBlueprint(text: string, fileSha256: string): Blueprint {
  const digest = `sha256:${fileSha256.slice(0, 16)}`;
  const match = FRONT_MATTER.exec(text);
  if (!match) return { revision: digest, revisionFrom: 'sha256', body: text };
  const body = text.slice(match[0].length);
  const named = frontMatterRevision(match[1]!);
  if (named === undefined || named === '') return { revision: digest, revisionFrom: 'sha256', body };
  if (!REVISION_PATTERN.test(named)) {
    return { revision: digest, revisionFrom: 'sha256', body, warning: `${BLUEPRINT_PATH}: front matter revision is not a token ([A-Za-z0-9._:+-], at most 64); the revision is its digest` };
  }
  return { revision: named, revisionFrom: 'front-matter', body };
}

export interface RoleReceipt {
  id: string;
  /** `request` when the request named it, `default` when it is the policy's default role. */
  selectedBy: 'request' | 'default';
  source: string;
  /** sha256 of the role block as delivered. */
  sha256: string;
}

export interface BlueprintReceipt {
  /** The revision, or `none` when no blueprint block was delivered. */
  revision: string;
  source: string | null;
  /** sha256 of the blueprint block as delivered; null with `none`. */
  sha256: string | null;
}

/** What shaped a prompt, auditable without re-reading it. */
export interface Receipts {
  role: RoleReceipt | null;
  blueprint: BlueprintReceipt;
  /** The experiences delivered, in order: each block's source reference and sha256. */
  experiences: Array<{ sourceRef: string; sha256: string }>;
  /** The preference settings the preferences block applied. */
  preferences: Preferences;
}

/**
 * The receipts of a compile: the role and blueprint blocks as delivered (with the role's id
 * and how it was chosen, and the blueprint's revision), the experiences that fit the
 * budget, and the preferences applied. A fact without its block (an empty role file) gives
 * no receipt for it. Pure: equal compiles give equal receipts.
 */
export function receiptsFor(
  compiled: Pick<CompiledContext, 'blocks'>,
  facts: { role?: { id: string; selectedBy: 'request' | 'default' } | undefined; blueprintRevision?: string | undefined; preferences?: Preferences | undefined },
): Receipts {
  const role = compiled.blocks.find((block) => block.kind === 'role');
  const blueprint = compiled.blocks.find((block) => block.kind === 'blueprint');
  return {
    role: role && facts.role ? { id: facts.role.id, selectedBy: facts.role.selectedBy, source: role.source, sha256: role.sha256 } : null,
    blueprint:
      blueprint && facts.blueprintRevision !== undefined
        ? { revision: facts.blueprintRevision, source: blueprint.source, sha256: blueprint.sha256 }
        : { revision: NO_BLUEPRINT, source: null, sha256: null },
    experiences: compiled.blocks.filter((block) => block.kind === 'experience').map((block) => ({ sourceRef: block.source, sha256: block.sha256 })),
    preferences: compiled.blocks.some((block) => block.kind === 'preferences') ? appliedPreferences(facts.preferences) : {},
  };
}
