// Hubs and spokes as a picture: the hubs this node mounts directories of
// (GET /api/v1/spokes), this node, and the spokes that talk to it as a hub
// (GET /api/v1/hub/spokes); each link labelled with its figures. A click
// on a link or a spoke shows its details.
import { get } from "../api";
import { bytes, facts, h, note, percent, s, section, table, time } from "../dom";

export interface Mount {
  local: string;
  hub: string;
  remote: string;
  user: string;
  mode: string;
  state: string;
  state_since: string | null;
  write: string;
  feed: { cursor: number; hub_last_change: number; lag: number };
  transfer: {
    requests: number;
    wire_bytes_in: number;
    wire_bytes_out: number;
    chunk_wire_bytes: number;
    chunk_logical_bytes: number;
    compression_saved_bytes: number;
  };
  cache: { hits: number; hit_bytes: number; misses: number; miss_bytes: number };
  prefetch: { enabled: boolean; experts: { name: string; weight: number; precision: number; fetched_bytes: number }[] };
  writeback?: { files: number; bytes: number; oldest_age_s: number; last_error: string };
}

export interface SpokeList {
  spokes: Mount[];
}

// A spoke that has talked to this node as its hub (GET /api/v1/hub/spokes).
export interface RemoteSpoke {
  user: string;
  region: string;
  address: string;
  feed_connected: boolean;
  first_seen: string;
  last_request: string;
  requests: number;
  residency_denials: number;
  sent_logical_bytes: number;
  sent_wire_bytes: number;
  // What its chunk cache held when it last said (null until it does), and
  // with ?path=, how much of that path.
  cache_reported: string | null;
  cache_chunks: number | null;
  path_cached?: { chunks: number; bytes: number } | null;
}

// The hub keeps one entry per user, region and peer host (the address's
// port changes from request to request).
export const spokeId = (r: RemoteSpoke) => `${r.user}@${r.address.replace(/:\d+$/, "")}${r.region ? "/" + r.region : ""}`;
export const spokeHref = (r: RemoteSpoke) => "#/fabric/spoke/" + encodeURIComponent(spokeId(r));
const feed = (r: RemoteSpoke) => (r.feed_connected ? "connected" : "not connected");

export const hitRatio = (m: Mount) => percent(m.cache.hits, m.cache.hits + m.cache.misses);
const saved = (m: Mount) => percent(m.transfer.compression_saved_bytes, m.transfer.chunk_logical_bytes);

function hubName(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}

const ROW = 90; // between nodes of a column
const EDGE = 100; // the centre of a node in the outer columns, from the edge

function node(x: number, y: number, title: string, sub: string, kind: string, href?: string): SVGElement {
  const g = s(
    "g",
    { class: "node " + kind, transform: `translate(${x},${y})`, "data-node": title },
    s("rect", { x: -80, y: -24, width: 160, height: 48, rx: 8 }),
    s("text", { y: -4, "text-anchor": "middle", class: "title" }, title),
    s("text", { y: 14, "text-anchor": "middle", class: "sub" }, sub),
  );
  if (href) return s("a", { href }, g);
  return g;
}

// A line between two nodes, its label above the middle of its free part.
function link(x1: number, y1: number, x2: number, y2: number, lines: string[], href: string, name: string): SVGElement {
  const vertical = x1 === x2;
  const mx = (x1 + x2) / 2 + (vertical ? 8 : 0);
  const my = (y1 + y2) / 2 + (vertical ? 6 : -8);
  return s(
    "a",
    { href, class: "link", "data-link": name },
    s("line", { x1, y1, x2, y2 }),
    ...lines.map((t, i) => s("text", { x: mx, y: my + (vertical ? i - (lines.length - 1) / 2 : i - lines.length + 1) * 13,
      "text-anchor": vertical ? "start" : "middle" }, t)),
  );
}

// Hubs, this node, and the spokes of this hub (that column only when
// there are any): side by side on a wide screen, top to bottom on a
// narrow one.
function picture(region: string, mounts: Mount[], remotes: RemoteSpoke[], narrow: boolean): SVGElement {
  const hubs = [...new Set(mounts.map((m) => m.hub))];
  const columns = [hubs.length > 0, true, remotes.length > 0].filter(Boolean).length;
  // Along the columns (x when wide), and across them (y when wide).
  const gap = narrow ? 130 : columns === 3 ? 350 : 480;
  const pitch = narrow ? 180 : ROW;
  // Narrow: room on the right of a vertical line for its label.
  const across = Math.max(Math.max(hubs.length, remotes.length, 1) * pitch + (narrow ? 0 : 20), narrow ? 340 : 0);
  const along = (columns - 1) * gap + 2 * (narrow ? 40 : EDGE);
  const first = narrow ? 40 : EDGE;
  const at = (column: number, i: number, n: number): [number, number] => {
    const c = first + column * gap;
    const r = (across / (n + 1)) * (i + 1);
    return narrow ? [r, c] : [c, r];
  };
  const hubColumn = 0;
  const selfColumn = hubs.length ? 1 : 0;
  const remoteColumn = selfColumn + 1;
  const self = at(selfColumn, 0, 1);
  // Where a line leaves a node towards the next column.
  const out = ([x, y]: [number, number], dir: number): [number, number] => (narrow ? [x, y + dir * 24] : [x + dir * 80, y]);
  const parts: SVGElement[] = [];
  // Mounts of one hub share its line: their labels stack above it.
  hubs.forEach((u, i) => {
    const label = mounts.filter((m) => m.hub === u).flatMap((m) =>
      [`${m.local} · lag ${m.feed.lag}`, `${bytes(m.transfer.chunk_logical_bytes)} fetched · hit ${hitRatio(m)}`]);
    const mount = mounts.find((m) => m.hub === u)!;
    parts.push(link(...out(at(hubColumn, i, hubs.length), 1), ...out(self, -1), label, "#/fabric/mount" + mount.local, mount.local));
  });
  remotes.forEach((r, i) => {
    parts.push(link(...out(self, 1), ...out(at(remoteColumn, i, remotes.length), -1),
      [`${r.requests} requests`, `${bytes(r.sent_logical_bytes)} sent`], spokeHref(r), spokeId(r)));
  });
  hubs.forEach((u, i) => parts.push(node(...at(hubColumn, i, hubs.length), hubName(u), "hub", "hub")));
  parts.push(node(...self, "this node", region || "no region", "self"));
  remotes.forEach((r, i) =>
    parts.push(node(...at(remoteColumn, i, remotes.length), r.user, r.region || "no region", "spoke", spokeHref(r))));
  const [W, H] = narrow ? [across, along] : [along, across];
  return s("svg", { viewBox: `0 0 ${W} ${H}`, class: "fabric", role: "img", "aria-label": "hubs and spokes",
    style: `max-width: ${W}px` }, ...parts);
}

function mountDetails(m: Mount): HTMLElement {
  const t = m.transfer;
  return section(
    "Spoke mount " + m.local,
    facts([
      ["Hub", h("code", {}, m.hub + " → " + m.remote)],
      ["Hub user", m.user],
      ["Feed", h("span", { class: m.state === "connected" ? "badge ok" : "badge bad" }, m.state)],
      ["Since", time(m.state_since)],
      ["Mode", `${m.mode}, write-${m.write}`],
      ["Lag (changes)", String(m.feed.lag)],
      ["Requests to the hub", String(t.requests)],
      ["Chunks fetched (logical)", bytes(t.chunk_logical_bytes)],
      ["Chunks on the wire", bytes(t.chunk_wire_bytes)],
      ["Compression saved", `${bytes(t.compression_saved_bytes)} (${saved(m)})`],
      ["Dedup saved (cache hits, not fetched)", `${m.cache.hits} chunks, ${bytes(m.cache.hit_bytes)}`],
      ["Hit ratio", hitRatio(m)],
      ["Write-back backlog", m.writeback ? `${m.writeback.files} files, ${bytes(m.writeback.bytes)}` : "–"],
    ]),
    m.prefetch.enabled
      ? table(
          ["Expert", "Weight", "Precision", "Fetched"],
          m.prefetch.experts.map((e) => [e.name, e.weight.toFixed(2), percent(e.precision, 1), bytes(e.fetched_bytes)]),
        )
      : note("The learning prefetcher is off for this mount."),
  );
}

function remoteDetails(r: RemoteSpoke): HTMLElement {
  return section(
    "Spoke " + spokeId(r),
    facts([
      ["Hub user", r.user],
      ["Region", r.region || "–"],
      ["Address", r.address],
      ["Feed", h("span", { class: r.feed_connected ? "badge ok" : "badge bad" }, feed(r))],
      ["First seen", time(r.first_seen)],
      ["Last request", time(r.last_request)],
      ["Requests", String(r.requests)],
      ["Sent (logical)", bytes(r.sent_logical_bytes)],
      ["Sent (wire)", bytes(r.sent_wire_bytes)],
      ["Residency denials", String(r.residency_denials)],
      ["Cache", r.cache_reported ? `${r.cache_chunks} chunks, as reported ${time(r.cache_reported)}` : "not reported yet"],
    ]),
  );
}

export async function fabric(main: HTMLElement, rest: string[]): Promise<void> {
  const [info, list, remotes] = await Promise.all([
    get<{ region: string }>("/api/v1/info"),
    get<SpokeList>("/api/v1/spokes"),
    get<{ spokes: RemoteSpoke[] }>("/api/v1/hub/spokes").then((r) => r.spokes),
  ]);
  const mounts = list.spokes;
  const children: (HTMLElement | SVGElement)[] = [h("h1", {}, "Fabric")];
  const narrow = main.clientWidth < 560;
  children.push(section("Hubs and spokes", picture(info.region, mounts, remotes, narrow)));
  if (rest[0] === "mount") {
    const local = "/" + rest.slice(1).join("/");
    const m = mounts.find((x) => x.local === local);
    children.push(m ? mountDetails(m) : note("No spoke mount " + local, "error"));
  } else if (rest[0] === "spoke") {
    const r = remotes.find((x) => spokeId(x) === rest[1]);
    children.push(r ? remoteDetails(r) : note("No spoke " + rest[1], "error"));
  }
  children.push(
    section(
      "Links",
      mounts.length === 0 && remotes.length === 0
        ? note("This node mounts no hub directory, and no spoke has talked to it.")
        : table(
            ["Link", "State", "Lag", "Fetched", "Wire", "Saved", "Hit ratio"],
            [
              ...mounts.map((m) => [
                h("a", { href: "#/fabric/mount" + m.local }, `${hubName(m.hub)} → ${m.local}`),
                m.state,
                m.feed.lag,
                bytes(m.transfer.chunk_logical_bytes),
                bytes(m.transfer.chunk_wire_bytes),
                saved(m),
                hitRatio(m),
              ]),
              ...remotes.map((r) => [
                h("a", { href: spokeHref(r), "data-spoke": spokeId(r) }, `this hub → ${r.user} (${r.region || "no region"})`),
                feed(r),
                "–",
                bytes(r.sent_logical_bytes),
                bytes(r.sent_wire_bytes),
                percent(Math.max(0, r.sent_logical_bytes - r.sent_wire_bytes), r.sent_logical_bytes),
                "–",
              ]),
            ],
          ),
    ),
  );
  main.replaceChildren(...children);
}
