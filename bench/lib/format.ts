/** Number and table formatting of the reports and the scenarios' notes. */

export function fmtInt(v: number): string {
  return Math.round(v).toLocaleString("en-US");
}

/** Microseconds from nanoseconds: 1 decimal below 100 µs, whole numbers above. */
export function fmtUs(ns: number | undefined): string {
  if (ns === undefined || Number.isNaN(ns)) return "—";
  const us = ns / 1000;
  return us < 100 ? us.toFixed(1) : fmtInt(us);
}

export function fmtRatio(v: number): string {
  return `${v >= 0.1 || v === 0 ? v.toFixed(2) : v.toPrecision(2)}×`;
}

/** A Markdown table; columns are right-aligned (numbers) except those in `leftColumns`. */
export function table(
  header: string[],
  rows: string[][],
  leftColumns: readonly number[] = [0],
): string {
  const line = (cells: string[]) => `| ${cells.join(" | ")} |`;
  const align = header.map((_, i) => (leftColumns.includes(i) ? "---" : "---:"));
  return [line(header), line(align), ...rows.map(line)].join("\n");
}
