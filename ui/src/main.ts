// The console's shell: sign-in, the navigation and the hash router
// (#/page/rest...). Each page renders into the main element from the REST
// API; a page that is left stops its timers through its AbortSignal.
import "./style.css";
import { ApiError, session, signIn, signOut, whenSignedOut } from "./api";
import { h, message, note } from "./dom";
import { access } from "./pages/access";
import { cache } from "./pages/cache";
import { data } from "./pages/data";
import { fabric } from "./pages/fabric";
import { governance } from "./pages/governance";
import { overview } from "./pages/overview";

export type Page = (main: HTMLElement, rest: string[], signal: AbortSignal) => Promise<void>;

const PAGES: [string, string, Page][] = [
  ["overview", "Overview", overview],
  ["fabric", "Fabric", fabric],
  ["data", "Data", data],
  ["governance", "Governance", governance],
  ["access", "Access", access],
  ["cache", "Cache", cache],
];

const app = document.getElementById("app")!;
let leaving: AbortController | null = null;

function route(): [string, string[]] {
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const name = PAGES.some(([n]) => n === parts[0]) ? parts[0] : "overview";
  return [name, parts.slice(1).filter((p) => p !== "")];
}

function loginView(): void {
  leaving?.abort();
  const user = h("input", { name: "user", autocomplete: "username", required: true });
  const password = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true });
  const status = h("div", {});
  const form = h(
    "form",
    { class: "login card" },
    h("h1", {}, "Weft console"),
    h("label", {}, "User", user),
    h("label", {}, "Password", password),
    h("button", { type: "submit" }, "Sign in"),
    status,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    status.replaceChildren(note("Signing in…"));
    try {
      await signIn(user.value, password.value);
      render();
    } catch (e) {
      status.replaceChildren(note(message(e), "error"));
    }
  });
  app.replaceChildren(h("main", { class: "center" }, form));
  user.focus();
}

// Why a page could not be shown; a 403 (a page of the administration parts,
// for a user who is not an administrator) says so plainly.
function failure(e: unknown, user: string): HTMLElement {
  if (e instanceof ApiError && e.status === 403)
    return h("p", { class: "note error", role: "alert", "data-forbidden": "" },
      `Forbidden: ${user} may not see this page (${e.message}). Sign in as an administrator for it.`);
  return note(message(e), "error");
}

function render(): void {
  const s = session();
  if (!s) return loginView();
  const [name, rest] = route();
  leaving?.abort();
  leaving = new AbortController();
  const main = h("main", { id: "page", "data-page": name });
  const nav = h(
    "nav",
    {},
    h("span", { class: "brand" }, "weft"),
    h(
      "ul",
      {},
      ...PAGES.map(([n, title]) =>
        h("li", {}, h("a", { href: "#/" + n, "aria-current": n === name ? "page" : undefined }, title)),
      ),
    ),
    h(
      "span",
      { class: "who" },
      s.user,
      h("button", { class: "link", onclick: async () => {
        try {
          await signOut();
        } finally {
          loginView();
        }
      } }, "Sign out"),
    ),
  );
  app.replaceChildren(h("header", {}, nav), main);
  const [, title, page] = PAGES.find(([n]) => n === name)!;
  main.append(note("Loading…"));
  const signal = leaving.signal;
  page(main, rest, signal).catch((e) => {
    if (signal.aborted) return;
    main.replaceChildren(h("h1", {}, title), failure(e, s.user));
  });
}

whenSignedOut(loginView);
window.addEventListener("hashchange", render);
render();
