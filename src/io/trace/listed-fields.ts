import type { RunSummaryBody as RunSummary, TraceEventInput } from '../../../schemas/trace.js';

/** What `GET /runs` shows of a run beyond its identity, from its latest event. */
export type ListedFields = Pick<RunSummary, 'compiledFor' | 'topicId' | 'role' | 'engine' | 'warnings' | 'requestId' | 'traceparent'>;

/** A short recorded string (an id, an instant), or null: a tampered record cannot put a long text in a listing. */
function shortText(value: unknown): string | null {
  return typeof value === 'string' && value.length <= 128 ? value : null;
}

/**
 * The listed fields of an event (both backends): the minute compiled for (`nowUsed`), the
 * topic asked for, the role played (its receipt, else the role asked for), the engine, how
 * many warnings, and the correlation ids.
 */
export function listedFields(event: Pick<TraceEventInput, 'request' | 'receipts' | 'warnings' | 'requestId' | 'traceparent'>): ListedFields {
  const request: Record<string, unknown> = event.request ?? {};
  const fields: ListedFields = {
    compiledFor: shortText(request['nowUsed']),
    topicId: shortText(request['topicId']),
    role: shortText(event.receipts?.role?.id) ?? shortText(request['role']),
    engine: shortText(request['engine']),
    warnings: Array.isArray(event.warnings) ? event.warnings.length : 0,
  };
  const requestId = shortText(event.requestId);
  if (requestId !== null) fields.requestId = requestId;
  const traceparent = shortText(event.traceparent);
  if (traceparent !== null) fields.traceparent = traceparent;
  return fields;
}

/** The trace id of a recorded traceparent (`00-<trace id>-<parent id>-<flags>`). */
export function traceIdOfTraceparent(traceparent: string | undefined): string | undefined {
  return traceparent === undefined || traceparent.length < 35 ? undefined : traceparent.slice(3, 35);
}
