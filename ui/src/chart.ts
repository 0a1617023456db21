// Figures over time: GET /api/v1/metrics/history, rates and ratios of its
// cumulative counters, and a line chart drawn as SVG.
import { get } from "./api";
import { h, note, s } from "./dom";

export type Point = [number, number]; // unix seconds, value

export interface Series {
  name: string;
  kind: string;
  labels: Record<string, string>;
  points: Point[];
}

export interface Line {
  label: string;
  points: Point[];
}

// The series of the named metrics.
export async function history(names: string[]): Promise<Series[]> {
  const url = "/api/v1/metrics/history" + "?" + names.map((n) => "name=" + encodeURIComponent(n)).join("&");
  return (await get<{ series: Series[] }>(url)).series;
}

// Per second between samples of a cumulative counter (a restart, where the
// counter falls, counts from zero).
export function rate(points: Point[]): Point[] {
  const out: Point[] = [];
  for (let i = 1; i < points.length; i++) {
    const [t0, v0] = points[i - 1];
    const [t1, v1] = points[i];
    if (t1 <= t0) continue;
    out.push([t1, (v1 >= v0 ? v1 - v0 : v1) / (t1 - t0)]);
  }
  return out;
}

// Adds up lines point by point (by timestamp).
export function sum(lines: Point[][]): Point[] {
  const at = new Map<number, number>();
  for (const l of lines) for (const [t, v] of l) at.set(t, (at.get(t) ?? 0) + v);
  return [...at.entries()].sort((a, b) => a[0] - b[0]);
}

// The series grouped by `key` (null: left out), each group's counters as
// one summed rate.
export function rates(series: Series[], key: (s: Series) => string | null): Line[] {
  const groups = new Map<string, Point[][]>();
  for (const x of series) {
    const k = key(x);
    if (k === null) continue;
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k)!.push(rate(x.points));
  }
  return [...groups.entries()].map(([label, ls]) => ({ label, points: sum(ls) }));
}

// part / (part + rest) at each timestamp both have, from two rate lines.
export function ratio(part: Point[], rest: Point[]): Point[] {
  const other = new Map(rest);
  const out: Point[] = [];
  for (const [t, v] of part) {
    const r = other.get(t);
    if (r === undefined || v + r === 0) continue;
    out.push([t, v / (v + r)]);
  }
  return out;
}

const COLORS = ["#2563eb", "#dc2626", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#db2777", "#4b5563"];

// A line chart; `format` writes a value of the y axis, which goes up to
// `top` (ratios: 1) or else to the largest value.
export function chart(title: string, lines: Line[], format: (v: number) => string, top?: number): HTMLElement {
  const shown = lines.filter((l) => l.points.length > 0);
  const fig = h("figure", { class: "chart", "data-chart": title }, h("figcaption", {}, title));
  if (shown.length === 0) {
    fig.append(note("No samples yet: the server records a point every interval."));
    return fig;
  }
  const W = 600;
  const H = 200;
  const L = 64;
  const B = 22;
  const all = shown.flatMap((l) => l.points);
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]));
  top ??= Math.max(...all.map((p) => p[1]), 0) || 1;
  const yTop = top;
  const x = (t: number) => L + ((t - t0) / (t1 - t0 || 1)) * (W - L - 8);
  const y = (v: number) => 8 + (1 - v / yTop) * (H - B - 8);
  const svg = s(
    "svg",
    { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title},
    s("line", { x1: L, y1: y(0), x2: W - 8, y2: y(0), class: "axis" }),
    s("line", { x1: L, y1: 8, x2: L, y2: y(0), class: "axis" }),
    s("text", { x: L - 4, y: 14, class: "tick", "text-anchor": "end" }, format(yTop)),
    s("text", { x: L - 4, y: y(0), class: "tick", "text-anchor": "end" }, format(0)),
    s("text", { x: L, y: H - 4, class: "tick" }, new Date(t0 * 1000).toLocaleTimeString()),
    s("text", { x: W - 8, y: H - 4, class: "tick", "text-anchor": "end" }, new Date(t1 * 1000).toLocaleTimeString()),
    ...shown.map((l, i) =>
      s("polyline", {
        points: l.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" "),
        fill: "none",
        stroke: COLORS[i % COLORS.length],
        "stroke-width": 2,
        "vector-effect": "non-scaling-stroke",
        "data-series": l.label,
      }),
    ),
  );
  const legend = h(
    "ul",
    { class: "legend" },
    ...shown.map((l, i) =>
      h(
        "li",
        {},
        h("span", { class: "swatch", "data-color": i % COLORS.length }),
        `${l.label}: ${format(l.points[l.points.length - 1][1])}`,
      ),
    ),
  );
  fig.append(svg, legend);
  return fig;
}

// A chart of the named metrics' history.
export async function historyChart(
  title: string,
  names: string[],
  lines: (series: Series[]) => Line[],
  format: (v: number) => string,
  top?: number,
): Promise<HTMLElement> {
  return chart(title, lines(await history(names)), format, top);
}
