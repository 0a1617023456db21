// A small DOM builder and the formats every page shares.

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | EventListener | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

export function s(tag: string, attrs: Attrs = {}, ...children: (Child | Child[])[]): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

function setAttrs(el: Element, attrs: Attrs): void {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (typeof v === "function") el.addEventListener(k.replace(/^on/, ""), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

function append(el: Element, children: (Child | Child[])[]): void {
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

// A table whose rows scroll sideways on a narrow screen.
export function table(head: string[], rows: Child[][], attrs: Attrs = {}): HTMLElement {
  return h(
    "div",
    { class: "scroll" },
    h(
      "table",
      attrs,
      h("thead", {}, h("tr", {}, ...head.map((t) => h("th", {}, t)))),
      h("tbody", {}, ...rows.map((r) => h("tr", {}, ...r.map((c) => h("td", {}, c))))),
    ),
  );
}

// Label/value pairs.
export function facts(pairs: [string, Child][]): HTMLElement {
  return h("dl", { class: "facts" }, ...pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

export function note(text: string, kind: "info" | "error" | "ok" = "info"): HTMLElement {
  return h("p", { class: "note " + kind, role: kind === "error" ? "alert" : "status" }, text);
}

export function section(title: string, ...children: (Child | Child[])[]): HTMLElement {
  return h("section", { class: "card" }, h("h2", {}, title), ...children);
}

export function bytes(n: number | undefined): string {
  if (n === undefined || n === null || Number.isNaN(n)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return (i === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 2 : 1)) + " " + units[i];
}

export function percent(part: number, whole: number): string {
  return whole > 0 ? ((100 * part) / whole).toFixed(1) + " %" : "–";
}

export function duration(seconds: number): string {
  const s = Math.floor(seconds);
  if (s < 60) return s + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + (s % 60) + " s";
  if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
  return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
}

export function time(iso: string | null | undefined): string {
  if (!iso) return "–";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

// The message of anything thrown.
export function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
