/**
 * What delivery derives from a compiled result, and keeps: its ETags, its HUD and its
 * answer's per-result bytes. A shared result (`JobResult.shared`: a persona's within one
 * minute) is a plain frozen value that holds nothing of its consumers; delivery keeps what
 * it derives from one here, in one `WeakMap` per app keyed by the result, so it lives
 * exactly as long as the result and no longer. A result not shared is delivered once and
 * keeps nothing. The HUD is derived from the reads as much as from the result, so it is
 * also kept by the reads it was built from (a second `WeakMap`, keyed by the session's list
 * of files loaded: the very array a replayed day hands out), for a new minute's result
 * built from the same reads to take again.
 */
import { buildHud, type Hud, type HudBasis } from '../core/hud.js';
import type { JobResult } from '../sources/job.js';
import type { ResultParts } from './answer.js';
import { etagFor, representationOf, type Representation } from './conditional.js';
import type { AnswerView, CompiledDelivery } from './delivery.js';

/** A HUD and what it was built from, so another delivery of the same result can take it again while it holds. */
interface HudBuilt extends HudBasis {
  readonly hud: Hud;
}

type Etags = { -readonly [representation in Representation]?: string };

/** What delivery keeps of one shared result. */
export interface ResultDelivered {
  /** The ETag of each representation of its answer without the HUD. */
  readonly etags: Etags;
  /** The HUD last built for it, and the ETag of the JSON that carries that HUD. */
  hud?: { readonly built: HudBuilt; readonly etags: Etags };
  /** Per view, its answer's per-result JSON, kept from that view's second answer (most results are answered once in a view). */
  readonly answers: { [view in AnswerView]?: ResultParts };
  readonly answered: { [view in AnswerView]?: true };
}

/** Delivery's one place of reuse: what it keeps of each shared result, while the result lives, and the HUD of each list of reads, while the list lives. */
export interface DeliveredResults {
  /** What delivery keeps of `result`, or undefined for a result not shared. */
  of(result: JobResult): ResultDelivered | undefined;
  /**
   * The HUD of `basis`: the one `kept` holds, else the one last built from the same reads
   * (`basis.loaded`), while it holds, else built afresh and kept for those reads.
   * The same value either way as `buildHud(basis)`; a new minute's result, built from the
   * reads of the minute before, takes the same object, which the trace writer has already
   * written.
   */
  hud(basis: HudBasis, kept: ResultDelivered | undefined): HudBuilt;
}

export function createDeliveredResults(): DeliveredResults {
  const kept = new WeakMap<JobResult, ResultDelivered>();
  const byReads = new WeakMap<HudBasis['loaded'], HudBuilt>();
  return {
    of(result) {
      if (result.shared !== true) return undefined;
      let entry = kept.get(result);
      if (entry === undefined) kept.set(result, (entry = { etags: {}, answers: {}, answered: {} }));
      return entry;
    },
    hud(basis, entry) {
      const own = entry?.hud?.built;
      if (own !== undefined && holds(own, basis)) return own;
      const known = byReads.get(basis.loaded);
      if (known !== undefined && holds(known, basis)) return known;
      const built = { ...basis, hud: buildHud(basis) };
      byReads.set(basis.loaded, built);
      return built;
    },
  };
}

const sameItems = <T>(a: readonly T[], b: readonly T[]) => a === b || (a.length === b.length && a.every((item, i) => item === b[i]));

/**
 * Whether `built` was built from the very same files and misses (a brain hands out one
 * entry per file version, a replayed day the same arrays) and blocks of the same kinds,
 * sources and sizes within the same budget — what the HUD shows of them — so it is what
 * `buildHud(basis)` would give.
 */
function holds(built: HudBuilt, basis: HudBasis): boolean {
  return sameItems(built.loaded, basis.loaded) && sameItems(built.missing, basis.missing) && sameShown(built, basis);
}

function sameShown(built: HudBasis, basis: HudBasis): boolean {
  if (built.budget.limitChars !== basis.budget.limitChars || built.budget.usedChars !== basis.budget.usedChars) return false;
  if (built.blocks === basis.blocks) return true;
  if (built.blocks.length !== basis.blocks.length) return false;
  return built.blocks.every((block, i) => block.kind === basis.blocks[i]!.kind && block.source === basis.blocks[i]!.source && block.chars === basis.blocks[i]!.chars);
}

/** The warnings, HUD and ETag of a compiled delivery: for a shared result, taken from or kept in `kept`; the HUD through `delivered.hud`. */
export function describe(delivery: CompiledDelivery, delivered: DeliveredResults, kept: ResultDelivered | undefined): { warnings: readonly string[]; hud: Hud; etag: string } {
  const { result } = delivery;
  const { compiled } = result;
  const warnings = delivery.warnings.length === 0 ? compiled.warnings : [...delivery.warnings, ...compiled.warnings];
  const built = delivered.hud({ loaded: delivery.loaded, missing: delivery.absent, blocks: compiled.blocks, budget: compiled.budget }, kept);
  const { hud } = built;
  // The ETags of the JSON with the HUD are kept beside the HUD they cover.
  if (kept !== undefined && kept.hud?.built !== built) kept.hud = { built, etags: {} };
  const representation = representationOf(delivery);
  const withHud = representation === 'json' && delivery.hud === true;
  const etags = kept === undefined ? {} : withHud ? kept.hud!.etags : kept.etags;
  const etag = result.validator?.etag ?? etags[representation] ?? etagFor(result, representation, withHud ? hud : null);
  etags[representation] = etag;
  return { warnings, hud, etag };
}

/** The JSON answer of a compiled delivery in its view, with a shared result's own part written once per view and kept from its second answer on. */
export function answerBody(delivery: CompiledDelivery, kept: ResultDelivered | undefined, warnings: readonly string[], hud: Hud): string | Buffer {
  const { result } = delivery;
  const view = delivery.view ?? 'full';
  const perRequest = {
    runId: delivery.runId,
    ...(delivery.subject.kind === 'persona' ? { persona: delivery.subject.id } : { worker: delivery.subject.id }),
    sources: delivery.sources,
    warnings,
    surface: delivery.surface,
    phase: delivery.identifiers['phase'],
    ...delivery.answerMembers,
    ...(delivery.hud === true ? { hud } : {}),
  };
  const parts = kept === undefined ? undefined : (kept.answers[view] ?? delivery.answer.resultParts(resultMembers(result, view), result.compiled));
  // Kept from the view's second answer of the result on: parts kept from every first answer would outlive the young generation for nothing.
  if (kept !== undefined && kept.answers[view] === undefined) {
    if (kept.answered[view] === true) kept.answers[view] = parts;
    kept.answered[view] = true;
  }
  return delivery.answer.body(perRequest, () => resultMembers(result, view), parts);
}

/**
 * The members of a response that come from the compiled result: the compile itself and the
 * route's extras; the lean view adds the cache plan's boundaries, which its schema writes as
 * digests (class, prefix length and digest: the serializer writes only the schema's members).
 */
function resultMembers(result: JobResult, view: AnswerView): Record<string, unknown> {
  const members = result.extra === undefined ? { ...result.compiled } : { ...result.compiled, ...result.extra };
  return view === 'session' ? { ...members, cacheBoundaries: result.compiled.cache.boundaries } : members;
}
