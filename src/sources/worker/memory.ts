/**
 * A worker's memory notes: the newest memory files within their caps, parsed and indexed
 * once per version of their bytes, left out oldest first past the total caps, with a warning.
 */
import { indexMemoryNotes, type MemoryNoteIndex } from '../../core/memory-notes.js';
import { quoteForWarning } from '../../core/text.js';
import type { BrainFile, BrainReader, ReadResult } from '../../io/brain.js';
import { remembered } from '../../core/memo.js';
import { MAX_MEMORY_FILES, MAX_MEMORY_NOTES, MEMORY_FILE_BYTES, MEMORY_READ_BATCH, MEMORY_TOTAL_BYTES, type WorkerMemo } from './request.js';
import { parsedFileKey } from './files.js';

function memoryNotes(result: BrainFile, memo: WorkerMemo, maxNotes: number): MemoryNoteIndex {
  return remembered(memo.memoryNotes, `${parsedFileKey(result)}|${maxNotes}`, () => indexMemoryNotes(result.path, result.text, maxNotes), () => memoryNotesBytes(result));
}

/** What a memory file's notes and word index weigh. */
function memoryNotesBytes(result: BrainFile): number {
  return 8 * result.text.length + 1024;
}

/** What a compile left out of a worker's memory to stay within its caps. */
function memoryOmissions(dir: string, files: number, notes: number): string | undefined {
  if (files === 0 && notes === 0) return undefined;
  const parts = [
    ...(files > 0 ? [`${files} older ${files === 1 ? 'file' : 'files'}`] : []),
    ...(notes > 0 ? [`${notes} older ${notes === 1 ? 'note' : 'notes'}`] : []),
  ];
  return `${dir}: ${parts.join(' and ')} left out; a compile reads at most ${MEMORY_TOTAL_BYTES / 1024 / 1024} MiB and ${MAX_MEMORY_NOTES} notes of memory, the newest kept`;
}

/** A worker's memory notes, oldest file first (ranking ties keep file order: files by name, entries top to bottom), and what they weigh. */
export interface ReadMemory {
  readonly indexes: readonly MemoryNoteIndex[];
  readonly bytes: number;
}

export const NO_MEMORY: ReadMemory = Object.freeze({ indexes: Object.freeze([]), bytes: 0 });

/**
 * A worker's memory notes: its newest files read first (by name, last first, in batches),
 * each file's newest notes kept, until `MEMORY_TOTAL_BYTES` or `MAX_MEMORY_NOTES` is
 * reached; older ones are left out with one warning.
 */
export async function readMemory(brain: BrainReader, worker: string, memo: WorkerMemo, warnings: string[]): Promise<ReadMemory> {
  const dir = `workers/${worker}/memory`;
  const listing = await brain.list(dir);
  if (listing.status !== 'ok') {
    if (listing.status !== 'missing') warnings.push(`${dir} could not be listed (${listing.reason.detail})`);
    return NO_MEMORY;
  }
  warnings.push(...listing.warnings);
  const names = listing.files.filter((name) => name.endsWith('.md'));
  if (names.length > MAX_MEMORY_FILES) warnings.push(`${dir} has ${names.length} files; only the last ${MAX_MEMORY_FILES} by name (the newest) are recalled`);
  const newestFirst = names.slice(-MAX_MEMORY_FILES).reverse();
  const kept: MemoryNoteIndex[] = [];
  let bytes = 0;
  let bytesLeft = MEMORY_TOTAL_BYTES;
  let notesLeft = MAX_MEMORY_NOTES;
  let filesLeftOut = 0;
  let notesLeftOut = 0;
  for (let start = 0; start < newestFirst.length; start += MEMORY_READ_BATCH) {
    const batch = newestFirst.slice(start, start + MEMORY_READ_BATCH);
    if (bytesLeft === 0 || notesLeft === 0) {
      filesLeftOut += batch.length;
      continue;
    }
    const results: ReadResult[] = await Promise.all(batch.map((name) => brain.read(`${dir}/${name}`, { maxBytes: MEMORY_FILE_BYTES, keep: 'tail' })));
    for (const result of results) {
      if (result.status !== 'ok') {
        if (result.status !== 'missing') warnings.push(`${quoteForWarning(result.path)} could not be read (${result.reason.detail})`);
        continue;
      }
      if (bytesLeft === 0 || notesLeft === 0 || result.textBytes > bytesLeft) {
        bytesLeft = 0;
        filesLeftOut++;
        continue;
      }
      warnings.push(...result.warnings);
      bytesLeft -= result.textBytes;
      const index = memoryNotes(result, memo, notesLeft);
      bytes += memoryNotesBytes(result);
      notesLeft -= index.notes.length;
      notesLeftOut += index.total - index.notes.length;
      kept.push(index);
    }
  }
  const omissions = memoryOmissions(dir, filesLeftOut, notesLeftOut);
  if (omissions !== undefined) warnings.push(omissions);
  return { indexes: kept.reverse(), bytes };
}
