/**
 * How a cache area is declared: once, in its user's table, from which its slot in the
 * user's memo (`MemosOf`), the memo that remembers nothing (`noMemos`) and the area itself
 * (`createAreas` in `src/cache-area.ts`, which the cache set sizes by the area's share) all
 * follow. `COMPILER_AREAS` (core/compile/memo.ts) is one such table; a table of several
 * users' tables is `joinAreas` of them, each slot once.
 */
import { noMemo, type Memo } from './memo.js';

/** What an area may be keyed by and hold: anything but `undefined` and `null` (a miss is `undefined`). */
export type AreaKey = object | string | number;
export type AreaValue = object | string | number | boolean;

/**
 * One cache area: its name, which labels its stats and metrics; its share of the cache set's
 * bound, with the reason for it beside the entry; and the key and value it holds. Its slot
 * in the user's memo is its property name in the table.
 */
export interface Area<K extends AreaKey, V extends AreaValue> {
  readonly name: string;
  readonly share: number;
  /** The area's slot when nothing is remembered: `NO_MEMO`, typed by the area's key and value. */
  readonly none: Memo<K, V>;
}

/** Declares an area holding `V` under `K`: `area<string, PrefixStates>('compiler.prefixes', 0.03)`. */
export function area<K extends AreaKey, V extends AreaValue>(name: string, share: number): Area<K, V> {
  return Object.freeze({ name, share, none: noMemo<K, V>() });
}

/** A user's areas, by the slot each fills in its memo. */
export interface Areas {
  readonly [slot: string]: Area<never, AreaValue>;
}

/** The slots that more than one of `tables` declares (never when each slot is declared once). */
type SharedSlots<Tables extends readonly Areas[], Seen extends PropertyKey = never> = Tables extends readonly [infer First extends Areas, ...infer Rest extends readonly Areas[]]
  ? (keyof First & Seen) | SharedSlots<Rest, Seen | keyof First>
  : never;

/** Every slot of each of `tables`. */
type AllSlots<Tables extends readonly Areas[]> = Tables extends readonly [infer First extends Areas, ...infer Rest extends readonly Areas[]] ? First & AllSlots<Rest> : unknown;

/** `tables` as one table. */
export type JoinedAreas<Tables extends readonly Areas[]> = { readonly [Slot in keyof AllSlots<Tables>]: AllSlots<Tables>[Slot] };

/**
 * One table of the areas of several users' tables, each slot once. A spread of the tables would
 * let a slot two of them declare keep the later one's area, and hand the other user an area of
 * another key and value (or of another share): that fails to compile, and, should a cast slip
 * one past, throws when the table is built.
 */
export function joinAreas<Tables extends readonly Areas[]>(
  ...tables: Tables & ([SharedSlots<Tables>] extends [never] ? unknown : { readonly declaredTwice: SharedSlots<Tables> })
): JoinedAreas<Tables> {
  const joined: Record<string, Area<never, AreaValue>> = {};
  for (const table of tables) {
    for (const [slot, each] of Object.entries(table)) {
      if (Object.hasOwn(joined, slot)) throw new Error(`cache area slot '${slot}' is declared twice: by ${joined[slot]!.name} and by ${each.name}`);
      joined[slot] = each;
    }
  }
  // Each slot holds its own table's entry, as `JoinedAreas` says; an object built slot by slot cannot be checked against it, so it is asserted.
  return Object.freeze(joined) as JoinedAreas<Tables>;
}

/** The memo a table of areas describes: each slot a `Memo` of its area's key and value. */
export type MemosOf<T extends Areas> = { readonly [Slot in keyof T]: T[Slot]['none'] };

/** The memo of `table` that remembers nothing. Frozen. */
export function noMemos<T extends Areas>(table: T): MemosOf<T> {
  // Each slot takes its own area's `none`, the type `MemosOf` gives it; TypeScript cannot check an object built slot by slot (`fromEntries`, or a `for...in` filling a `Partial`) against a mapped type, so it is asserted.
  return Object.freeze(Object.fromEntries(Object.entries(table).map(([slot, each]) => [slot, each.none]))) as MemosOf<T>;
}
