/**
 * Conditional requests on a compile route: the ETag of each representation of a compiled
 * result, `If-None-Match` answered with 304, and `If-None-Match: *` on a compile (POST)
 * answered with 412 before anything is compiled.
 * @see https://www.rfc-editor.org/rfc/rfc9110#section-13.1.2
 */
import { sha256Hex } from '../core/digest.js';
import type { Hud } from '../core/hud.js';
import type { JobResult } from '../sources/job.js';
import type { DeliveryRequest } from './delivery.js';

/** One representation of a compiled result, each with its own ETag: the full JSON, the instructions as text, or the lean JSON. */
export type Representation = 'json' | 'text' | 'session';

/** The representation a delivery answers with. */
export function representationOf(delivery: Pick<DeliveryRequest, 'format' | 'view'>): Representation {
  return delivery.format === 'text' ? 'text' : delivery.view === 'session' ? 'session' : 'json';
}

/**
 * Strong validator of one representation of a compiled result (RFC 9110 §8.8.3). Text is
 * the instructions alone, so its ETag covers the prompts. JSON also covers what the caller
 * acts on that the prompts do not fix: the cache plan (its route key carries `engine`), the
 * budget, the voice and tools, the route's own members (topic, recall, receipts) and, with
 * `?hud=1`, the HUD. Members that describe the request rather than the prompt (runId,
 * sources, warnings) are left out, so an unchanged prompt still answers 304. The lean JSON
 * (`session`, a persona's `?view=session`) covers the same, under its own suffix: its bytes
 * are not the full answer's, so neither is its ETag.
 */
export function etagFor(result: Pick<JobResult, 'compiled' | 'extra' | 'realtime'>, representation: Representation, hud: Hud | null = null): string {
  const { compiled } = result;
  const prompts = `${compiled.promptSha256}\n${compiled.inputSha256 ?? '-'}`;
  if (representation === 'text') return `"${sha256Hex(prompts).slice(0, 40)}.txt"`;
  // The live context and the session or setup are the prompts again (with the voice and tools, covered by `realtime`; the provider stays a member).
  const { liveContext: _liveContext, session: _session, setup: _setup, voice: _voice, tools: _tools, ...members } = result.extra ?? {};
  const covered = JSON.stringify([prompts, compiled.cache, compiled.budget, result.realtime?.voice ?? null, result.realtime?.toolsSha256 ?? null, members, hud]);
  return `"${sha256Hex(covered).slice(0, 40)}${representation === 'session' ? '.session' : hud === null ? '' : '.hud'}"`;
}

/** Weak comparison: `*` matches any current representation. */
export function ifNoneMatchHits(header: string | string[] | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const opaque = etag.replace(/^W\//, '');
  for (const candidate of [header].flat().join(',').split(',')) {
    const trimmed = candidate.trim();
    if (trimmed === '*' || trimmed.replace(/^W\//, '') === opaque) return true;
  }
  return false;
}

/**
 * `If-None-Match: *` on a method other than GET or HEAD: "only if no current representation
 * exists", which a compile always has, so the answer is 412 Precondition Failed without
 * performing the method — nothing is compiled, traced or delivered.
 */
export function ifNoneMatchAny(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  return [header].flat().join(',').split(',').some((candidate) => candidate.trim() === '*');
}

/** Whether a compiled delivery answers 304: a result that is its own validator says so itself, else `If-None-Match` holds its ETag. */
export function notModified(result: JobResult, header: string | string[] | undefined, etag: string): boolean {
  return result.validator?.unchanged === true || ifNoneMatchHits(header, etag);
}
