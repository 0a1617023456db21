// Residency rules (path prefix -> regions its data may go to): view, add
// after a dry run that lists what the rule would block, remove; and the
// hub's residency denials over time.
import { api, get, pathUrl } from "../api";
import { historyChart, rates } from "../chart";
import { bytes, h, message, note, section, table } from "../dom";

interface Rule {
  prefix: string;
  regions: string[];
  source?: string;
}
interface DryRun {
  rule: Rule;
  blocked_spokes: { user: string; region: string; address: string }[];
  files: number;
  bytes: number;
  paths: string[];
  complete: boolean; // false: the walk stopped early, there are more
}

function ruleForm(refresh: () => void): HTMLElement {
  const prefix = h("input", { name: "prefix", placeholder: "data/projects/eu", required: true });
  const regions = h("input", { name: "regions", placeholder: "eu-west-1, eu-central-1", required: true });
  const out = h("div", { class: "out" });
  const body = (dry: boolean) => ({
    prefix: prefix.value.trim().replace(/^\/+|\/+$/g, ""),
    regions: regions.value.split(/[\s,]+/).filter((r) => r !== ""),
    dry_run: dry,
  });
  const add = h("button", { type: "button", "data-action": "add-rule", disabled: true }, "Add rule");
  // A changed rule needs a new dry run before it is added.
  const changed = () => {
    add.disabled = true;
  };
  prefix.addEventListener("input", changed);
  regions.addEventListener("input", changed);
  const dryRun = async (ev: Event) => {
    ev.preventDefault();
    out.replaceChildren(note("Checking…"));
    try {
      const r = await api<DryRun>("POST", "/api/v1/residency", body(true));
      const spokes = r.blocked_spokes.map((b) => `${b.user} (${b.region || "no region"}, ${b.address})`);
      const more = r.complete ? "" : " at least";
      out.replaceChildren(
        h("div", { class: "dry-run" },
          note(`This rule would keep${more} ${r.files} files (${bytes(r.bytes)}) from ${spokes.length} spoke(s)` +
            (spokes.length ? ": " + spokes.join(", ") : "") + ".", r.files || spokes.length ? "info" : "ok"),
          r.paths.length ? h("ul", { class: "paths" }, ...r.paths.slice(0, 50).map((p) => h("li", {}, h("code", {}, p)))) : null,
          r.paths.length > 50 ? h("p", { class: "muted" }, `and ${r.paths.length - 50} more`) : null));
      add.disabled = false;
    } catch (e) {
      out.replaceChildren(note(message(e), "error"));
    }
  };
  add.addEventListener("click", async () => {
    try {
      await api<Rule>("POST", "/api/v1/residency", body(false));
      refresh();
    } catch (e) {
      out.replaceChildren(note(message(e), "error"));
    }
  });
  const form = h("form", { class: "inline" },
    h("label", {}, "Path prefix", prefix),
    h("label", {}, "Regions allowed", regions),
    h("button", { type: "submit", "data-action": "dry-run" }, "Dry run"),
    add);
  form.addEventListener("submit", dryRun);
  return h("div", {}, form, out);
}

export async function governance(main: HTMLElement, _rest: string[], signal: AbortSignal): Promise<void> {
  const [list, denials] = await Promise.all([
    get<{ rules: Rule[] }>("/api/v1/residency").then((r) => r.rules),
    historyChart("Residency denials", ["weft_hub_residency_denials_total"],
      (series) => rates(series, () => "denials"), (v) => v.toFixed(v < 10 ? 2 : 0) + "/s"),
  ]);
  const refresh = () => {
    if (!signal.aborted) governance(main, _rest, signal).catch((e) => main.append(note(message(e), "error")));
  };
  const remove = (r: Rule) => async () => {
    try {
      await api("DELETE", "/api/v1/residency/" + pathUrl(r.prefix));
      refresh();
    } catch (e) {
      main.append(note(message(e), "error"));
    }
  };
  main.replaceChildren(
    h("h1", {}, "Governance"),
    section(
      "Residency rules",
      h("p", { class: "muted" }, "A hub serves the data under a prefix only to spokes of the regions listed."),
      list.length === 0
        ? note("No rules: every spoke may fetch everything.")
        : table(["Prefix", "Regions", "Source", ""], list.map((r) => [
            h("code", {}, r.prefix), r.regions.join(", "), r.source ?? "–",
            r.source === "config"
              ? h("span", { class: "muted" }, "set in the configuration")
              : h("button", { onclick: remove(r), "data-remove": r.prefix }, "Remove"),
          ]), { "data-table": "residency" }),
      ruleForm(refresh),
    ),
    section("Denials over time", denials),
  );
}
