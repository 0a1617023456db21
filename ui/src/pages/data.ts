// Browse the namespace (export/dir/...): listings, and per path its size,
// versions, the spoke mount it belongs to, how much of it this spoke's
// cache holds or (at a hub) which spokes cache it, and whether it is
// pinned; warm, pin, unpin and evict it, with a warm job's progress as it
// runs.
import { ApiError, api, get, isAdmin, pathUrl, query } from "../api";
import { bytes, facts, h, message, note, section, table, time } from "../dom";
import { type RemoteSpoke, type SpokeList, spokeHref, spokeId } from "./fabric";

interface Entry {
  name: string;
  type: "file" | "directory" | "symlink";
  size?: number;
  mtime?: string;
  version?: number;
}
interface FileInfo extends Entry {
  path: string;
  mode: string;
  uid: number;
  gid: number;
  dirty?: boolean;
}
interface Versions {
  current: number;
  versions: { version: number; size: number; mtime: string; chunks: number; id: string }[];
}
// A pin as GET /api/v1/cache/pins lists it (the cache page shows them too).
export interface Pin {
  path: string;
  files: number;
  chunks: number;
  cached_chunks: number;
  cached_bytes: number;
  pending: boolean;
  job?: Job;
}
interface Job {
  id: string;
  type: string;
  path: string;
  state: "running" | "succeeded" | "failed" | "cancelled";
  progress: { bytes_done: number; bytes_total: number; items_done: number; items_total: number };
  eta_seconds: number | null;
  result: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
}

// The data page of a namespace path ("export/dir/file").
export const dataHref = (path: string) => "#/data/" + path.split("/").filter((p) => p !== "").map(encodeURIComponent).join("/");

const under = (path: string, prefix: string) => path === prefix || path.startsWith(prefix + "/");

// How many files a job could not read, and why the first could not.
function readErrors(result: Record<string, unknown>): string {
  const first = (result.errors as { path: string; code: string; message: string }[] | undefined)?.[0];
  return `${result.error_count} files could not be read` + (first ? `; ${first.path}: ${first.message} (${first.code})` : "");
}

// Shows a job and polls it until it ends (or the page is left).
function watchJob(first: Job, signal: AbortSignal): HTMLElement {
  const box = h("div", { class: "job", "data-job": first.id });
  const show = (j: Job) => {
    const p = j.progress;
    box.dataset.jobState = j.state;
    const parts = [
      h("div", {}, h("strong", {}, `${j.type} ${j.path}: `), h("span", { class: "job-state" }, j.state)),
      h("progress", { max: Math.max(p.bytes_total, 1), value: j.state === "succeeded" ? Math.max(p.bytes_total, 1) : p.bytes_done }),
      h("div", { class: "muted" },
        `${p.items_done}/${p.items_total} files, ${bytes(p.bytes_done)} of ${bytes(p.bytes_total)}` +
          (j.eta_seconds != null && j.state === "running" ? `, about ${Math.ceil(j.eta_seconds)} s left` : "")),
      j.error ? note(j.error.message, "error") : null,
      j.result && Number(j.result.error_count ?? 0) > 0 ? note(readErrors(j.result), "error") : null,
    ];
    box.replaceChildren(...parts.filter((x): x is HTMLElement => x !== null));
  };
  show(first);
  const poll = async (j: Job) => {
    while (j.state === "running" && !signal.aborted) {
      await new Promise((r) => setTimeout(r, 250));
      if (signal.aborted) return;
      j = await get<Job>("/api/v1/jobs/" + encodeURIComponent(j.id));
      show(j);
    }
  };
  poll(first).catch((e) => box.append(note(message(e), "error")));
  return box;
}

async function pins(): Promise<Pin[]> {
  try {
    return (await get<{ pins: Pin[] }>("/api/v1/cache/pins")).pins;
  } catch (e) {
    if (e instanceof ApiError && (e.status === 400 || e.status === 404)) return [];
    throw e;
  }
}

// `noPin`: why pin and evict do not apply here, or null.
function actions(path: string, pinned: Pin | undefined, noPin: string | null, signal: AbortSignal, refresh: () => void): HTMLElement {
  const out = h("div", { class: "out" });
  const run = (f: () => Promise<Node | null>) => async () => {
    out.replaceChildren(note("Working…"));
    try {
      const shown = await f();
      out.replaceChildren(...(shown ? [shown] : []));
    } catch (e) {
      out.replaceChildren(note(message(e), "error"));
    }
  };
  const warm = run(async () => watchJob(await api<Job>("POST", "/api/v1/jobs", { type: "warm", path }), signal));
  const pin = run(async () => {
    const p = await api<Pin>("POST", "/api/v1/cache/pins", { path, warm: true });
    return h("div", {}, note(`Pinned: ${p.files} files, ${p.chunks} chunks.`, "ok"), p.job ? watchJob(p.job, signal) : null);
  });
  const unpin = run(async () => {
    await api("DELETE", "/api/v1/cache/pins/" + pathUrl(path));
    refresh();
    return null;
  });
  const evict = run(async () => {
    const r = await api<{ files: number; chunks: number; bytes: number; pinned: number }>("POST", "/api/v1/cache/evict", { path });
    return note(`Evicted ${r.chunks} chunks (${bytes(r.bytes)}) of ${r.files} files; ${r.pinned} kept by pins.`, "ok");
  });
  return h(
    "div",
    {},
    h(
      "div",
      { class: "actions" },
      h("button", { onclick: warm, "data-action": "warm" }, "Warm"),
      pinned
        ? h("button", { onclick: unpin, "data-action": "unpin" }, "Unpin")
        : h("button", { onclick: pin, "data-action": "pin", disabled: noPin !== null }, "Pin"),
      h("button", { onclick: evict, "data-action": "evict", disabled: noPin !== null }, "Evict"),
    ),
    noPin === null ? null : note(noPin),
    out,
  );
}

function crumbs(parts: string[]): HTMLElement {
  return h(
    "nav",
    { class: "crumbs", "aria-label": "path" },
    ...parts.flatMap((p, i) => [
      i > 0 ? " / " : null,
      h("a", { href: dataHref(parts.slice(0, i + 1).join("/")) }, p),
    ]),
  );
}

async function listing(path: string, cursor?: string): Promise<{ entries: Entry[]; next_cursor: string | null }> {
  return get("/api/v1/dirs/" + pathUrl(path) + query({ cursor, limit: 200 }));
}

interface Held {
  files: number;
  chunks: number;
  bytes: number;
  cached_chunks: number;
  cached_bytes: number;
}

// How much of a path under a spoke mount this node's cache holds.
function cachedHere(path: string): HTMLElement {
  const out = h("span", { "data-cached-here": "" }, "…");
  get<Held>("/api/v1/cache/held/" + pathUrl(path))
    .then((x) => {
      out.dataset.cachedHere = `${x.cached_chunks}/${x.chunks}`;
      out.textContent = `${x.cached_chunks} of ${x.chunks} chunks (${bytes(x.cached_bytes)} of ${bytes(x.bytes)})` +
        (x.files !== 1 ? ` of ${x.files} files` : "");
    })
    .catch((e) => out.replaceChildren(note(message(e), "error")));
  return out;
}

interface SpokesOfPath {
  spokes: RemoteSpoke[];
  path: { path: string; files: number; chunks: number; bytes: number; complete: boolean };
}

// At a hub: which spokes cache the path, as each last reported its cache.
// Nothing at a node no spoke has talked to (the path is not walked there).
function cachedBySpokes(path: string): HTMLElement {
  const box = h("div", {});
  get<{ spokes: RemoteSpoke[] }>("/api/v1/hub/spokes")
    .then((all) => (all.spokes.length === 0 ? null : get<SpokesOfPath>("/api/v1/hub/spokes" + query({ path }))))
    .then((r) => {
      if (r === null) return;
      const p = r.path;
      const rows = r.spokes.map((x) => {
        const c = x.path_cached;
        return [
          h("a", { href: spokeHref(x), "data-spoke": spokeId(x) }, `${x.user} (${x.region || "no region"})`),
          h("span", { "data-cached": c ? `${c.chunks}/${p.chunks}` : "" },
            c ? `${c.chunks} of ${p.chunks} chunks (${bytes(c.bytes)} of ${bytes(p.bytes)})` : "not reported yet"),
          x.cache_reported ? time(x.cache_reported) : "–",
        ];
      });
      box.replaceChildren(section("Cached by spokes",
        note(`The chunks of the current versions of ${p.files} files${p.complete ? "" : " (the first 100,000 entries)"}, ` +
          "as each spoke last reported its cache."),
        table(["Spoke", "Cached", "Reported"], rows, { "data-spokes-of-path": "" })));
    })
    .catch((e) => box.replaceChildren(note(message(e), "error")));
  return box;
}

// The file's versions; a node that keeps none of a file (a spoke mount's,
// for a user who does not see the mounts) answers not_supported.
async function versions(path: string, info: FileInfo): Promise<HTMLElement> {
  try {
    const v = await get<Versions>("/api/v1/versions/" + pathUrl(path));
    return table(["Version", "Size", "Chunks", "Sealed", "Id"],
      v.versions.map((x) => [String(x.version) + (x.version === v.current ? " (current)" : ""), bytes(x.size), x.chunks,
        time(x.mtime), h("code", {}, x.id.slice(0, 16) + "…")]));
  } catch (e) {
    if (!(e instanceof ApiError) || e.code !== "not_supported") throw e;
    return note(`Version ${info.version ?? 0} is current; this node keeps no older versions of it (${e.message}).`);
  }
}

export async function data(main: HTMLElement, rest: string[], signal: AbortSignal): Promise<void> {
  const parts = rest.length ? rest : ["data"];
  const path = parts.join("/");
  let info: FileInfo;
  try {
    info = await get<FileInfo>("/api/v1/stat/" + pathUrl(path));
  } catch (e) {
    // Refused or gone: say so where the path is shown.
    if (!(e instanceof ApiError) || e.status >= 500 || e.status === 401) throw e;
    main.replaceChildren(h("h1", {}, "Data"), crumbs(parts), note(`${e.message} (${e.code})`, "error"));
    return;
  }
  // Spoke mounts and pins are an administrator's to see and change.
  const admin = await isAdmin();
  const [spokes, pinList] = admin
    ? await Promise.all([get<SpokeList>("/api/v1/spokes"), pins()])
    : [{ spokes: [] } as SpokeList, []];
  // Spoke mounts are namespace paths; REST paths start with the export (the
  // default one, "data", is rooted at the namespace root).
  const nsPath = "/" + parts.slice(1).join("/");
  const mount = spokes.spokes.find((m) => under(nsPath, m.local));
  const pinned = pinList.find((p) => under(path, p.path));
  const refresh = () => data(main, rest, signal);
  const about = section(
    info.type === "directory" ? "Directory" : "File",
    facts([
      ["Path", h("code", {}, path)],
      ["Type", info.type],
      ["Size", info.type === "file" ? bytes(info.size) : "–"],
      ["Modified", time(info.mtime)],
      ["Mode", `${info.mode} (uid ${info.uid}, gid ${info.gid})`],
      ["Version", String(info.version ?? 0) + (info.dirty ? " (unsealed writes)" : "")],
      ["Spoke mount", !admin ? "– (shown to administrators)"
        : mount ? `${mount.local} of ${mount.hub} (${mount.remote})` : "not on a spoke mount (local)"],
      ["Pinned", pinned ? `yes, by ${pinned.path}: ${pinned.cached_chunks}/${pinned.chunks} chunks cached` : "no"],
      ...(mount ? [["Cached here", cachedHere(path)] satisfies [string, HTMLElement]] : []),
    ]),
    actions(path, pinned, !admin ? "Pin and evict are for administrators."
      : mount ? null : "Pin and evict apply to spoke mounts: this path is not below one.", signal, refresh),
  );
  const children: HTMLElement[] = [h("h1", {}, "Data"), crumbs(parts), about];
  if (admin && !mount) children.push(cachedBySpokes(path));
  if (info.type === "directory") {
    const rows = h("tbody", {});
    const more = h("div", {});
    const add = async (cursor?: string) => {
      const page = await listing(path, cursor);
      for (const e of page.entries) {
        const href = dataHref(path + "/" + e.name);
        rows.append(h("tr", {}, h("td", {}, h("a", { href, "data-entry": e.name }, e.name + (e.type === "directory" ? "/" : ""))),
          h("td", {}, e.type), h("td", {}, e.type === "file" ? bytes(e.size) : ""), h("td", {}, time(e.mtime)),
          h("td", {}, e.version ? String(e.version) : "")));
      }
      more.replaceChildren(page.next_cursor
        ? h("button", { onclick: () => add(page.next_cursor!).catch((e) => more.replaceChildren(note(message(e), "error"))) }, "More")
        : rows.children.length === 0 ? note("Empty directory.") : "");
    };
    await add();
    children.push(section("Contents",
      h("div", { class: "scroll" }, h("table", {}, h("thead", {}, h("tr", {}, ...["Name", "Type", "Size", "Modified", "Version"].map((t) => h("th", {}, t)))), rows)),
      more));
  } else if (mount) {
    // A spoke mount knows the current version only; the hub keeps the others.
    children.push(section("Versions", note(`Version ${info.version ?? 0} is current; older versions are kept at the hub (${mount.hub}).`)));
  } else {
    children.push(section("Versions", await versions(path, info)));
  }
  main.replaceChildren(...children);
}
