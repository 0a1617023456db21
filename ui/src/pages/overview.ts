// This node: version, region, endpoints, health, and throughput per
// protocol over time.
import { get, probe } from "../api";
import { historyChart, rates, type Series } from "../chart";
import { bytes, duration, facts, h, section, table, time } from "../dom";
import type { SpokeList } from "./fabric";

interface Info {
  version: string;
  region: string;
  started: string;
  uptime_seconds: number;
  endpoints: Record<string, string>;
  user: { name: string; admin: boolean };
}

// The byte counters of each protocol (NFS counts requests only).
const BYTE_COUNTERS: Record<string, string> = {
  weft_s3_sent_bytes_total: "S3",
  weft_s3_received_bytes_total: "S3",
  weft_rest_sent_bytes_total: "REST",
  weft_rest_received_bytes_total: "REST",
  weft_sftp_sent_bytes_total: "SFTP",
  weft_sftp_received_bytes_total: "SFTP",
  weft_smb_read_bytes_total: "SMB",
  weft_smb_written_bytes_total: "SMB",
};
const REQUEST_COUNTERS: Record<string, string> = {
  weft_s3_requests_total: "S3",
  weft_rest_requests_total: "REST",
  weft_sftp_requests_total: "SFTP",
  weft_smb_requests_total: "SMB",
  weft_nfs_requests_total: "NFS",
};

const perSecond = (v: number) => bytes(v) + "/s";
const byProtocol = (names: Record<string, string>) => (series: Series[]) =>
  rates(series, (x) => names[x.name] ?? null);

// The spoke mounts, for an administrator (the list is theirs only).
function mountsFact(spokes: SpokeList | null): HTMLElement | string {
  if (!spokes) return "–";
  const connected = spokes.spokes.filter((m) => m.state === "connected").length;
  return h("a", { href: "#/fabric" },
    spokes.spokes.length ? `${spokes.spokes.length} (${connected} connected to their hub)` : "none");
}

export async function overview(main: HTMLElement): Promise<void> {
  const [info, health, ready] = await Promise.all([get<Info>("/api/v1/info"), probe("/healthz"), probe("/readyz")]);
  const spokes = info.user.admin ? await get<SpokeList>("/api/v1/spokes") : null;
  const badge = (p: { ok: boolean; text: string }) => h("span", { class: p.ok ? "badge ok" : "badge bad" }, p.text);
  const [throughput, requests] = await Promise.all([
    historyChart("Throughput per protocol", Object.keys(BYTE_COUNTERS), byProtocol(BYTE_COUNTERS), perSecond),
    historyChart("Requests per protocol", Object.keys(REQUEST_COUNTERS), byProtocol(REQUEST_COUNTERS),
      (v) => v.toFixed(v < 10 ? 1 : 0) + "/s"),
  ]);
  main.replaceChildren(
    h("h1", {}, "Overview"),
    h(
      "div",
      { class: "grid" },
      section(
        "This node",
        facts([
          ["Region", info.region || "–"],
          ["Version", info.version],
          ["Started", time(info.started)],
          ["Up", duration(info.uptime_seconds)],
          ["Signed in as", info.user.name + (info.user.admin ? " (administrator)" : "")],
          ["Spoke mounts", mountsFact(spokes)],
          ["Live", badge(health)],
          ["Ready", badge(ready)],
        ]),
      ),
      section(
        "Endpoints",
        table(["Protocol", "Address"], Object.entries(info.endpoints).map(([p, a]) => [p, h("code", {}, a)])),
      ),
    ),
    section("Throughput", throughput, requests),
  );
}
