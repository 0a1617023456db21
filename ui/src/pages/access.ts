// Users, their S3 keys, API tokens, and the audit log searched by user,
// path, protocol and time. A user who is not an administrator sees and
// makes tokens of their own only.
import { api, get, isAdmin, query, session } from "../api";
import { bytes, h, message, note, section, table, time } from "../dom";

interface User {
  name: string;
  uid: number;
  gid: number;
  admin: boolean;
  s3_access_keys: string[];
  ssh_keys: unknown[];
}
interface Token {
  id: string;
  user: string;
  name: string;
  created: string;
}
interface AuditRecord {
  time: string;
  user: string;
  protocol: string;
  client: string;
  op: string;
  path: string;
  bytes: number;
  result: string;
  region?: string;
}

// Runs an action, then redraws the page; its error is shown in `out`.
const act = (out: HTMLElement, f: () => Promise<unknown>, redraw: () => void) => async () => {
  try {
    await f();
    redraw();
  } catch (e) {
    out.replaceChildren(note(message(e), "error"));
  }
};

function usersSection(users: User[], redraw: () => void): HTMLElement {
  const out = h("div", { class: "out" });
  const name = h("input", { name: "name", required: true, autocomplete: "off" });
  const password = h("input", { name: "password", type: "password", required: true, autocomplete: "new-password" });
  const admin = h("input", { name: "admin", type: "checkbox" });
  const form = h("form", { class: "inline" },
    h("label", {}, "Name", name), h("label", {}, "Password", password),
    h("label", { class: "check" }, admin, "administrator"), h("button", { type: "submit" }, "Create user"));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    act(out, () => api("POST", "/api/v1/users", { name: name.value, password: password.value, admin: admin.checked }), redraw)();
  });
  const newKey = (u: string) => async () => {
    try {
      const k = await api<{ access_key: string; secret_key: string }>("POST", `/api/v1/users/${encodeURIComponent(u)}/s3-keys`);
      out.replaceChildren(note(`New S3 key of ${u}: ${k.access_key} / ${k.secret_key} (the secret is shown only now).`, "ok"));
    } catch (e) {
      out.replaceChildren(note(message(e), "error"));
    }
  };
  return section(
    "Users",
    table(["Name", "uid:gid", "Role", "S3 keys", ""], users.map((u) => [
      u.name,
      `${u.uid}:${u.gid}`,
      u.admin ? "administrator" : "user",
      h("div", {}, ...u.s3_access_keys.map((k) => h("div", { class: "key" }, h("code", {}, k), " ",
        h("button", { class: "link", onclick: act(out, () => api("DELETE", `/api/v1/users/${encodeURIComponent(u.name)}/s3-keys/${encodeURIComponent(k)}`), redraw) }, "delete")))),
      h("div", { class: "actions" },
        h("button", { onclick: newKey(u.name) }, "New S3 key"),
        h("button", { onclick: act(out, () => api("DELETE", "/api/v1/users/" + encodeURIComponent(u.name)), redraw) }, "Delete")),
    ]), { "data-table": "users" }),
    form,
    out,
  );
}

// `notice`: what the last action has to say (a new token's secret).
function tokensSection(tokens: Token[], redraw: (notice?: HTMLElement) => void, notice?: HTMLElement): HTMLElement {
  const out = h("div", { class: "out" });
  if (notice) out.append(notice);
  const name = h("input", { name: "token-name", required: true, autocomplete: "off" });
  const form = h("form", { class: "inline", "data-form": "token" },
    h("label", {}, "Name", name), h("button", { type: "submit" }, "New token"));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    try {
      const t = await api<{ id: string; secret: string }>("POST", "/api/v1/tokens", { user: session()?.user, name: name.value });
      redraw(note(`New token ${t.id}: ${t.secret} (the secret is shown only now).`, "ok"));
    } catch (e) {
      out.replaceChildren(note(message(e), "error"));
    }
  });
  return section(
    "API tokens",
    table(["Id", "User", "Name", "Created", ""], tokens.map((t) => [
      h("code", {}, t.id), t.user, t.name + (t.id === session()?.tokenId ? " (this session)" : ""), time(t.created),
      h("button", { onclick: act(out, () => api("DELETE", "/api/v1/tokens/" + encodeURIComponent(t.id)), redraw) }, "Revoke"),
    ]), { "data-table": "tokens" }),
    form,
    out,
  );
}

function auditSection(): HTMLElement {
  const field = (name: string, label: string, attrs: Record<string, string> = {}) => {
    const input = h("input", { name, ...attrs });
    return [input, h("label", {}, label, input)] as const;
  };
  const [user, userL] = field("user", "User");
  const [path, pathL] = field("path", "Path prefix");
  const [protocol, protocolL] = field("protocol", "Protocol", { list: "protocols" });
  const [since, sinceL] = field("since", "Since", { type: "datetime-local" });
  const [until, untilL] = field("until", "Until", { type: "datetime-local" });
  const [limit, limitL] = field("limit", "At most", { type: "number", min: "1", value: "100" });
  const results = h("div", { "data-audit": "results" });
  const iso = (v: string) => (v ? new Date(v).toISOString() : undefined);
  const search = async (ev?: Event) => {
    ev?.preventDefault();
    results.replaceChildren(note("Searching…"));
    try {
      const q = query({ user: user.value, path: path.value, protocol: protocol.value, since: iso(since.value),
        until: iso(until.value), limit: limit.value });
      const r = await get<{ records: AuditRecord[] }>("/api/v1/audit" + q);
      results.replaceChildren(r.records.length === 0 ? note("No records match.") :
        table(["Time", "User", "Protocol", "Operation", "Path", "Bytes", "Result", "Client"], r.records.map((x) => [
          time(x.time), x.user, x.protocol, x.op, h("code", {}, x.path), bytes(x.bytes),
          h("span", { class: x.result === "ok" ? "" : "bad" }, x.result), x.client + (x.region ? ` (${x.region})` : ""),
        ]), { "data-table": "audit" }));
    } catch (e) {
      results.replaceChildren(note(message(e), "error"));
    }
  };
  const form = h("form", { class: "inline", "data-form": "audit" },
    userL, pathL, protocolL, sinceL, untilL, limitL, h("button", { type: "submit" }, "Search"),
    h("datalist", { id: "protocols" }, ...["s3", "nfs", "smb", "sftp", "rest", "hub"].map((p) => h("option", { value: p }))));
  form.addEventListener("submit", search);
  search();
  return section("Audit log", form, results);
}

export async function access(main: HTMLElement, rest: string[], signal: AbortSignal, notice?: HTMLElement): Promise<void> {
  const admin = await isAdmin();
  const [users, tokens] = await Promise.all([
    admin ? get<{ users: User[] }>("/api/v1/users") : null,
    get<{ tokens: Token[] }>("/api/v1/tokens"),
  ]);
  const redraw = (next?: HTMLElement) => {
    if (!signal.aborted) access(main, rest, signal, next).catch((e) => main.append(note(message(e), "error")));
  };
  const tokensPart = tokensSection(tokens.tokens, redraw, notice);
  main.replaceChildren(h("h1", {}, "Access"), ...(users
    ? [usersSection(users.users, redraw), tokensPart, auditSection()]
    : [note("Users and the audit log are for administrators; these are your own tokens."), tokensPart]));
}
