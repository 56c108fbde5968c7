/**
 * Columns for a terminal: each cell padded to its column's widest, two spaces between,
 * two spaces of indent, no trailing blanks. The first row (the header) sets the column
 * count. Pure.
 */
export function table(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => `  ${row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ')}`.trimEnd());
}
