// The REST API as the console uses it: the session's token (sessionStorage),
// JSON calls with `Authorization: Bearer`, and the errors weft answers
// ({"error": {"code", "message", "request_id"}}).

const KEY = "weft.session";

export interface Session {
  user: string;
  token: string;
  tokenId: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function session(): Session | null {
  const text = sessionStorage.getItem(KEY);
  if (!text) return null;
  try {
    return JSON.parse(text) as Session;
  } catch {
    return null;
  }
}

let onSignedOut: () => void = () => {};
export function whenSignedOut(f: () => void): void {
  onSignedOut = f;
}

// A path of the namespace ("export/dir/file") as URL segments.
export function pathUrl(path: string): string {
  return path
    .split("/")
    .filter((s) => s !== "")
    .map(encodeURIComponent)
    .join("/");
}

export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") q.append(k, String(v));
  const s = q.toString();
  return s ? "?" + s : "";
}

async function send(method: string, url: string, body: unknown, authorization: string | null): Promise<unknown> {
  const headers: Record<string, string> = { Accept: "application/json" };
  if (authorization) headers.Authorization = authorization;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let doc: unknown = null;
  if (text) {
    try {
      doc = JSON.parse(text);
    } catch {
      doc = text;
    }
  }
  if (!r.ok) {
    const e = (doc as { error?: { code?: string; message?: string } } | null)?.error;
    throw new ApiError(r.status, e?.code ?? "http_" + r.status, e?.message ?? `${method} ${url}: HTTP ${r.status}`);
  }
  return doc;
}

// One API call as the signed-in user; a 401 ends the session.
export async function api<T>(method: string, url: string, body?: unknown): Promise<T> {
  const s = session();
  try {
    return (await send(method, url, body, s ? "Bearer " + s.token : null)) as T;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401 && s) {
      sessionStorage.removeItem(KEY);
      onSignedOut();
    }
    throw e;
  }
}

export const get = <T>(url: string) => api<T>("GET", url);

// The signed-in user as the server sees them now: pages that show
// administration parts beside others ask for those only for an administrator.
export async function isAdmin(): Promise<boolean> {
  return (await get<{ user: { admin: boolean } }>("/api/v1/info")).user.admin;
}

// Probes answer without credentials; their status is what counts.
export async function probe(url: string): Promise<{ ok: boolean; text: string }> {
  try {
    const r = await fetch(url);
    return { ok: r.ok, text: r.ok ? "ok" : `HTTP ${r.status}` };
  } catch (e) {
    return { ok: false, text: String(e) };
  }
}

// Signs in with a weft user's password: the password is sent once, as
// Basic credentials for POST /api/v1/tokens, and the console keeps only
// the token it gets (a user's own, as the CLI's tokens are).
export async function signIn(user: string, password: string): Promise<Session> {
  const basic = "Basic " + btoa(String.fromCharCode(...new TextEncoder().encode(user + ":" + password)));
  const t = (await send("POST", "/api/v1/tokens", { user, name: "console" }, basic)) as { id: string; secret: string };
  const s: Session = { user, token: t.secret, tokenId: t.id };
  sessionStorage.setItem(KEY, JSON.stringify(s));
  return s;
}

export async function signOut(): Promise<void> {
  const s = session();
  if (!s) return;
  try {
    await api("DELETE", "/api/v1/tokens/" + encodeURIComponent(s.tokenId));
  } finally {
    sessionStorage.removeItem(KEY);
  }
}
