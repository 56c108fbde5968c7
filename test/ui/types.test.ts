/**
 * The viewer declares the API's shapes itself (ui/ is built without zod), so nothing but
 * this file keeps them one definition with schemas/trace.ts. At compile time, in
 * `npm run typecheck`: every object the API answers with has, at every depth, exactly the
 * fields the viewer's type has — a field the schema gains that the viewer does not show,
 * or one the viewer expects that the schema dropped, fails here, naming its path — and the
 * viewer's types accept whatever the schemas allow.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { RunList as ApiRunList, RunTrace as ApiRunTrace } from '../../schemas/trace.js';
import type { Status as ApiStatus } from '../../schemas/health.js';
import type { RunList, RunTrace, ServiceStatus } from '../../ui/src/model.js';

type Element<T> = T extends readonly (infer E)[] ? E : T;
type Shape<T> = Element<Exclude<T, null | undefined>>;
type IsObject<T> = [T] extends [object] ? ([T] extends [readonly unknown[]] ? false : true) : false;

/** The paths (`events.receipts.role`) present on one side only: `never` when both sides have the same fields throughout. */
export type FieldMismatches<Viewer, Schema, Path extends string = ''> =
  | (Exclude<keyof Viewer, keyof Schema> & string extends infer K ? (K extends string ? `${Path}${K} (viewer only)` : never) : never)
  | (Exclude<keyof Schema, keyof Viewer> & string extends infer K ? (K extends string ? `${Path}${K} (schema only)` : never) : never)
  | {
      [K in keyof Viewer & keyof Schema & string]: IsObject<Shape<Viewer[K]>> extends true
        ? IsObject<Shape<Schema[K]>> extends true
          ? FieldMismatches<Shape<Viewer[K]>, Shape<Schema[K]>, `${Path}${K}.`>
          : never
        : never;
    }[keyof Viewer & keyof Schema & string];

describe('the viewer’s trace types (checked by the compiler)', () => {
  it('have exactly the fields of schemas/trace.ts, both ways, at every depth', () => {
    expectTypeOf<FieldMismatches<RunTrace, ApiRunTrace>>().toEqualTypeOf<never>();
    expectTypeOf<FieldMismatches<RunList, ApiRunList>>().toEqualTypeOf<never>();
    expectTypeOf<FieldMismatches<ServiceStatus, ApiStatus>>().toEqualTypeOf<never>();
  });

  it('accept whatever the schemas allow', () => {
    expectTypeOf<ApiRunTrace>().toExtend<RunTrace>();
    expectTypeOf<ApiRunList>().toExtend<RunList>();
    expectTypeOf<ApiStatus>().toExtend<ServiceStatus>();
  });

  it('would name a field either side gained or lost (the check itself can fail)', () => {
    type Viewer = { runId: string; events: Array<{ at: string; receipts?: { role: { id: string } } }> };
    type Schema = { runId: string; events: Array<{ at: string; requestId?: string; receipts?: { role: { id: string; sha256: string } | null } }>; extra: number };
    expectTypeOf<FieldMismatches<Viewer, Schema>>().toEqualTypeOf<'extra (schema only)' | 'events.requestId (schema only)' | 'events.receipts.role.sha256 (schema only)'>();
    expectTypeOf<FieldMismatches<Schema, Viewer>>().toEqualTypeOf<'extra (viewer only)' | 'events.requestId (viewer only)' | 'events.receipts.role.sha256 (viewer only)'>();
  });
});
