// The spoke chunk cache: tier usage, pins, and hit ratios per tier and per
// prefetch expert over time.
import { ApiError, get } from "../api";
import { historyChart, rate, rates, ratio, type Line, type Series } from "../chart";
import { bytes, facts, h, note, percent, section, table } from "../dom";
import { dataHref, type Pin } from "./data";

interface Tier {
  bytes: number;
  budget: number;
  chunks: number;
  hits: number;
  misses: number;
  refused: number;
  evictions: number;
  pinned_bytes: number;
}
interface Cache {
  ram: Tier;
  ssd: Tier;
  misses: number;
  fetches: number;
  evictions: number;
  corrupt: number;
  pins: number;
  pinned_chunks: number;
}

const label = (x: Series, ...keys: string[]) => keys.map((k) => x.labels[k]).find((v) => v) ?? x.name;

// Per tier: hits / (hits + misses) between samples.
function tierRatios(series: Series[]): Line[] {
  const tiers = new Set(series.map((x) => label(x, "tier")));
  return [...tiers].map((t) => {
    const of = (name: string) => rates(series.filter((x) => x.name === name && label(x, "tier") === t), () => t)[0]?.points ?? [];
    return { label: t, points: ratio(of("weft_spoke_cache_tier_hits_total"), of("weft_spoke_cache_tier_misses_total")) };
  });
}

// Per expert (and mount): the share of its resolved predictions that were read.
function expertPrecision(series: Series[]): Line[] {
  return series
    .filter((x) => x.name === "weft_spoke_prefetch_precision")
    .map((x) => ({ label: label(x, "expert") + (x.labels.mount ? " " + x.labels.mount : ""), points: x.points }));
}

function expertFetches(series: Series[]): Line[] {
  return series.map((x) => ({ label: label(x, "expert") + (x.labels.mount ? " " + x.labels.mount : ""), points: rate(x.points) }));
}

function tierRow(name: string, t: Tier): (string | number)[] {
  return [name, bytes(t.bytes), t.budget ? bytes(t.budget) : "none", t.budget ? percent(t.bytes, t.budget) : "–",
    t.chunks, percent(t.hits, t.hits + t.misses), t.refused, t.evictions, bytes(t.pinned_bytes)];
}

export async function cache(main: HTMLElement): Promise<void> {
  let stats: Cache | null = null;
  let pins: Pin[] = [];
  let why = "";
  try {
    [stats, { pins }] = await Promise.all([get<Cache>("/api/v1/cache"), get<{ pins: Pin[] }>("/api/v1/cache/pins")]);
  } catch (e) {
    // A node without a chunk cache says why; a refusal is the page's.
    if (!(e instanceof ApiError) || e.status >= 500 || e.status === 403) throw e;
    why = e.message;
  }
  const charts = await Promise.all([
    historyChart("Hit ratio per tier", ["weft_spoke_cache_tier_hits_total", "weft_spoke_cache_tier_misses_total"],
      tierRatios, (v) => (100 * v).toFixed(0) + " %", 1),
    historyChart("Prefetch precision per expert", ["weft_spoke_prefetch_precision"], expertPrecision,
      (v) => (100 * v).toFixed(0) + " %", 1),
    historyChart("Prefetched per expert", ["weft_spoke_prefetch_fetched_bytes_total"], expertFetches,
      (v) => bytes(v) + "/s"),
  ]);
  main.replaceChildren(
    h("h1", {}, "Cache"),
    stats
      ? section(
          "Chunk cache",
          table(["Tier", "Holds", "Budget", "Used", "Chunks", "Hit ratio", "Refused", "Evicted", "Pinned"],
            [tierRow("RAM", stats.ram), tierRow("SSD", stats.ssd)], { "data-table": "tiers" }),
          facts([
            ["Misses", String(stats.misses)],
            ["Fetches", `${stats.fetches} (the other misses joined one under way)`],
            ["Corrupt SSD files found", String(stats.corrupt)],
          ]),
          h("h2", {}, "Pins"),
          pins.length === 0
            ? note("Nothing is pinned: pin a path of a spoke mount on the Data page.")
            : table(["Path", "Files", "Chunks cached", "Bytes cached", ""], pins.map((p) => [
                h("a", { href: dataHref(p.path) }, p.path),
                p.files, `${p.cached_chunks} of ${p.chunks}`, bytes(p.cached_bytes),
                p.pending ? "pending (waits for its hub)" : "",
              ]), { "data-table": "pins" }),
        )
      : section("Chunk cache", note("This node has no chunk cache: " + why)),
    section("Over time", ...charts),
  );
}
