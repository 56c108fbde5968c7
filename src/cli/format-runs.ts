import { groupCalls, utcMinute } from '../../ui/src/model.js';
import type { RunList } from '../../schemas/trace.js';
import { table } from './table.js';

/**
 * Renders a page of `GET /runs` for people at a terminal: one row per run, newest first —
 * the minute it was compiled for and when it was traced (UTC), its subject, topic, role and
 * engine, status with its warnings, events and run id — then how to ask for the next page.
 * A call's refreshes and reconnects are listed under its connect (`↳ refresh`), as the
 * viewer lists them. Pure; text from the trace is made inert by the CLI.
 */
export function formatRuns(list: RunList): string {
  if (list.runs.length === 0) {
    return list.partial && list.nextCursor !== null
      ? `no runs in the newest trace files read; older ones were not searched (--cursor ${list.nextCursor} searches on)\n`
      : 'no runs match\n';
  }
  const rows = groupCalls(list.runs as Parameters<typeof groupCalls>[0]).map(({ run, callPart, nested }) => [
    utcMinute(run.compiledFor)?.replace(' UTC', '') ?? '-',
    new Date(run.at).toISOString().slice(0, 19).replace('T', ' '),
    `${run.subject.kind} ${run.subject.id}`,
    [run.topicId && `topic ${run.topicId}`, run.role && `role ${run.role}`, run.engine && `engine ${run.engine}`].filter(Boolean).join(', ') || '-',
    `${run.status} ${run.outcome}`,
    run.warnings > 0 ? `${run.warnings} warning${run.warnings === 1 ? '' : 's'}` : '-',
    String(run.events),
    callPart === null ? run.runId : nested ? `↳ ${callPart.part} ${run.runId}` : `${run.runId} (${callPart.part} of call ${callPart.connect})`,
  ]);
  const lines = table([['compiled for (UTC)', 'traced (UTC)', 'subject', 'topic, role, engine', 'status', 'warnings', 'events', 'run id'], ...rows]);
  if (list.partial && list.nextCursor !== null) lines.push('', `(the search stopped at its read bound; --cursor ${list.nextCursor} searches older runs)`);
  else if (list.nextCursor !== null) lines.push('', `(older runs: --cursor ${list.nextCursor})`);
  return `${lines.join('\n')}\n`;
}
