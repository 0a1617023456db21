// Drives the web consoles of a hub and a spoke (started by console_test.py)
// in headless Chromium through playwright-core: each step is checked in the
// page and leaves a screenshot in $WEFT_ARTIFACTS. Exits 1 on a failed step
// or on any console error or page error in the browser.
import { createRequire } from "node:module";
import path from "node:path";

const env = process.env;
const { chromium } = createRequire(import.meta.url)(env.WEFT_PLAYWRIGHT);
const ARTIFACTS = env.WEFT_ARTIFACTS;
const SPOKE = { url: env.WEFT_SPOKE_URL, user: env.WEFT_SPOKE_USER, password: env.WEFT_SPOKE_PASSWORD };
const HUB = { url: env.WEFT_HUB_URL, user: env.WEFT_HUB_USER, password: env.WEFT_HUB_PASSWORD };
// A user of the hub and of the spoke (one name and password) who is not an
// administrator; signs in at the hub unless told otherwise.
const READER = { url: env.WEFT_HUB_URL, user: env.WEFT_READER_USER, password: env.WEFT_READER_PASSWORD };
const PAGES = ["overview", "fabric", "data", "governance", "access", "cache"];
const TIMEOUT = 15000;

const problems = []; // browser console errors and page errors
// The console errors a step causes on purpose: the browser's log of a
// call answered with an error, "Failed to load resource: ... status of
// 403", as { status, path: a RegExp of the URLs' paths }.
let expected = null;
let shot = 0;

function watch(page, where) {
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    const what = `${where}: console error: ${m.text()} (${m.location().url})`;
    const meant = expected && m.text().includes(`status of ${expected.status} `) &&
      expected.path.test(new URL(m.location().url).pathname);
    if (meant) process.stdout.write(`(expected ${what}) `);
    else problems.push(what);
  });
  page.on("pageerror", (e) => problems.push(`${where}: page error: ${e.message}`));
}

async function screenshot(page, name) {
  shot += 1;
  const file = path.join(ARTIFACTS, `${String(shot).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

// Runs a step, then saves a screenshot of `page` named after it; on failure
// the screenshot shows where it stopped.
async function step(name, page, f) {
  process.stdout.write(`STEP ${name} ... `);
  try {
    await f();
  } catch (e) {
    const file = await screenshot(page, "FAILED-" + name).catch(() => "none");
    const notes = await page.locator(".note.error").allTextContents().catch(() => []);
    console.log(`FAILED (screenshot ${file})`);
    throw new Error(`${name}: ${e.message}${notes.length ? "\npage says: " + notes.join(" | ") : ""}`);
  }
  console.log(`ok (${path.basename(await screenshot(page, name))})`);
}

const main = (page, name) => page.locator(`main#page[data-page="${name}"]`);

async function open(page, site, hash) {
  await page.goto(`${site.url}/ui/#/${hash}`);
}

// Waits for a page to finish loading: its heading, no "Loading…".
async function loaded(page, name) {
  await main(page, name).locator("h1").waitFor({ timeout: TIMEOUT });
}

async function signIn(page, site) {
  await page.goto(site.url + "/ui/");
  await page.locator('input[name="user"]').fill(site.user);
  await page.locator('input[name="password"]').fill(site.password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await loaded(page, "overview");
}

// Waits until each of the page's charts `titles` draws a line, reloading
// the page (its figures are read once) while the history has too few
// samples (the sites sample every second).
async function drawn(page, name, ...titles) {
  const empty = async () => {
    const out = [];
    for (const t of titles)
      if ((await main(page, name).locator(`figure[data-chart="${t}"] svg polyline[data-series]`).count()) === 0) out.push(t);
    return out;
  };
  for (let tries = 0; ; tries++) {
    await loaded(page, name);
    const missing = await empty();
    if (missing.length === 0) return;
    if (tries === 10) throw new Error(`these charts draw no line: ${missing.join(", ")}`);
    await page.waitForTimeout(1000);
    await page.reload();
  }
}

// No page is wider than the window (nothing to scroll sideways but tables,
// which scroll inside their own box).
async function fitsWidth(page) {
  const [doc, win] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  if (doc > win + 1) throw new Error(`the page is ${doc}px wide in a ${win}px window`);
}

async function desktop(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const spoke = await context.newPage();
  watch(spoke, "spoke");

  await step("desktop-login", spoke, async () => {
    await signIn(spoke, SPOKE);
    await main(spoke, "overview").getByText("us-east-1").first().waitFor();
    await main(spoke, "overview").getByText("Ready").waitFor();
    await main(spoke, "overview").getByText("1 (1 connected to their hub)").waitFor();
  });

  await step("desktop-fabric-spoke-link", spoke, async () => {
    await spoke.getByRole("link", { name: "Fabric" }).click();
    await loaded(spoke, "fabric");
    const link = spoke.locator('svg.fabric [data-link="/datasets"]');
    await link.waitFor();
    const label = await link.textContent();
    if (!/lag \d+/.test(label) || !/fetched/.test(label)) throw new Error("the link's label is " + label);
    await spoke.locator("svg.fabric .node.hub").waitFor();
    await link.click();
    await main(spoke, "fabric").getByRole("heading", { name: "Spoke mount /datasets" }).waitFor();
    await main(spoke, "fabric").locator(".badge.ok", { hasText: "connected" }).waitFor();
  });

  await step("desktop-data-browse", spoke, async () => {
    await spoke.getByRole("link", { name: "Data", exact: true }).click();
    await loaded(spoke, "data");
    await main(spoke, "data").locator('[data-entry="datasets"]').click();
    await main(spoke, "data").locator('[data-entry="train"]').click();
    await main(spoke, "data").locator('[data-entry="shard-000.bin"]').click();
    await main(spoke, "data").getByRole("heading", { name: "Versions" }).waitFor({ timeout: TIMEOUT });
    await main(spoke, "data").getByText("3.00 MiB").first().waitFor();
    await main(spoke, "data").getByText("/datasets of").waitFor();
  });

  await step("desktop-data-warm", spoke, async () => {
    await open(spoke, SPOKE, "data/data/datasets/train");
    await main(spoke, "data").getByRole("heading", { name: "Contents" }).waitFor({ timeout: TIMEOUT });
    await main(spoke, "data").locator('[data-action="warm"]').click();
    const job = main(spoke, "data").locator(".job");
    await job.waitFor();
    await main(spoke, "data").locator('.job[data-job-state="succeeded"]').waitFor({ timeout: 30000 });
    const text = await job.textContent();
    if (!text.includes("2/2 files")) throw new Error("the finished job shows " + text);
  });

  // What the spoke's cache holds of the warmed directory: all of it.
  await step("desktop-data-cached-here", spoke, async () => {
    await open(spoke, SPOKE, "data/data/datasets/train");
    const held = main(spoke, "data").locator('[data-cached-here*="/"]');
    await held.waitFor({ timeout: TIMEOUT });
    const [cached, chunks] = (await held.getAttribute("data-cached-here")).split("/");
    if (cached !== chunks || Number(chunks) === 0) throw new Error("the spoke caches " + await held.textContent());
  });

  await step("desktop-data-pin-evict", spoke, async () => {
    const d = main(spoke, "data");
    await d.locator('[data-action="pin"]').click();
    await d.getByText("Pinned: 2 files").waitFor({ timeout: TIMEOUT });
    await d.locator('.job[data-job-state="succeeded"]').waitFor({ timeout: 30000 });
    // Evicting a pinned directory keeps its chunks.
    await d.locator('[data-action="evict"]').click();
    await d.getByText(/Evicted 0 chunks .* kept by pins/).waitFor({ timeout: TIMEOUT });
    await open(spoke, SPOKE, "cache");
    await loaded(spoke, "cache");
    await main(spoke, "cache").locator('[data-table="pins"]', { hasText: "data/datasets/train" }).waitFor();
  });

  const hub = await context.newPage();
  watch(hub, "hub");
  await step("desktop-hub-login", hub, async () => {
    await signIn(hub, HUB);
    await main(hub, "overview").getByText("eu-west-1").first().waitFor();
  });

  // The spoke's read of a path the hub keeps in the EU is refused (the
  // browser logs the refused request), and the hub's audit log has it.
  async function refused(prefix) {
    expected = { status: 403, path: new RegExp(`^/api/v1/stat/${prefix}/secret\\.bin$`) };
    await open(spoke, SPOKE, `data/${prefix}/secret.bin`);
    const d = main(spoke, "data");
    await d.locator("h1, .note.error").first().waitFor({ timeout: TIMEOUT });
    if ((await d.locator('[data-action="warm"]').count()) > 0) {
      await d.locator('[data-action="warm"]').click();
      await d.locator('.job[data-job-state="failed"], .job .note.error, .out .note.error').first()
        .waitFor({ timeout: 30000 });
    }
    const text = await spoke.locator("main#page").textContent();
    if (!/denied|residency|not allowed|forbidden/i.test(text)) throw new Error("no refusal shown: " + text);
    expected = null;
    await open(hub, HUB, "access");
    await loaded(hub, "access");
    const form = main(hub, "access").locator('[data-form="audit"]');
    await form.locator('input[name="protocol"]').fill("hub");
    await form.locator('input[name="path"]').fill(prefix);
    await form.getByRole("button", { name: "Search" }).click();
    await main(hub, "access").locator('[data-table="audit"]', { hasText: "residency_denied" })
      .waitFor({ timeout: TIMEOUT });
  }

  await step("desktop-residency-denied-config-rule", spoke, () => refused("data/datasets/eu-only"));
  await screenshot(hub, "desktop-residency-denied-config-rule-hub-audit");

  await step("desktop-residency-dry-run", hub, async () => {
    await open(hub, HUB, "governance");
    await loaded(hub, "governance");
    const g = main(hub, "governance");
    // The configuration's rule is listed and cannot be removed here.
    await g.locator('[data-table="residency"]', { hasText: "data/datasets/eu-only" }).waitFor();
    if ((await g.locator('[data-remove="data/datasets/eu-only"]').count()) !== 0)
      throw new Error("a rule of the configuration offers Remove");
    await g.locator('input[name="prefix"]').fill("data/datasets/restricted");
    await g.locator('input[name="regions"]').fill("eu-west-1");
    await g.locator('[data-action="dry-run"]').click();
    await g.locator(".dry-run").waitFor({ timeout: TIMEOUT });
    const said = await g.locator(".dry-run").textContent();
    // The spoke has read the file: it is named, and so is the file.
    if (!said.includes("(us-east-1,") || !said.includes("data/datasets/restricted/secret.bin"))
      throw new Error("the dry run does not name the us-east-1 spoke and the file: " + said);
  });

  await step("desktop-residency-add", hub, async () => {
    await main(hub, "governance").locator('[data-action="add-rule"]').click();
    await main(hub, "governance").locator('[data-remove="data/datasets/restricted"]').waitFor({ timeout: TIMEOUT });
  });
  await step("desktop-residency-denied-new-rule", spoke, () => refused("data/datasets/restricted"));
  await screenshot(hub, "desktop-residency-denied-new-rule-hub-audit");

  await step("desktop-residency-denials-chart", hub, async () => {
    await open(hub, HUB, "governance");
    await drawn(hub, "governance", "Residency denials");
  });

  await step("desktop-residency-remove", hub, async () => {
    const g = main(hub, "governance");
    await g.locator('[data-remove="data/datasets/restricted"]').click();
    await g.locator('[data-table="residency"]', { hasText: "data/datasets/eu-only" }).waitFor({ timeout: TIMEOUT });
    await g.locator('[data-remove="data/datasets/restricted"]').waitFor({ state: "detached", timeout: TIMEOUT });
    if ((await g.locator('[data-table="residency"]').textContent()).includes("data/datasets/restricted"))
      throw new Error("the removed rule is still listed");
  });

  await step("desktop-hub-data-versions", hub, async () => {
    // At the hub the file written over S3 at the spoke has its versions.
    await open(hub, HUB, "data/data/datasets/train/shard-000.bin");
    const d = main(hub, "data");
    await d.getByRole("heading", { name: "Versions" }).waitFor({ timeout: TIMEOUT });
    await d.getByText("1 (current)").waitFor();
    await d.getByText("not on a spoke mount").waitFor();
  });

  await step("desktop-hub-data-cached-by-spokes", hub, async () => {
    // The hub's view of which spokes cache the directory the spoke warmed
    // and pinned, from the summaries the spoke sends (every second).
    const deadline = Date.now() + TIMEOUT;
    for (;;) {
      await open(hub, HUB, "data/data/datasets/train");
      const row = main(hub, "data").locator("[data-spokes-of-path] tr", { hasText: "us-east-1" });
      await row.waitFor({ timeout: TIMEOUT });
      const [cached, chunks] = (await row.locator("[data-cached]").getAttribute("data-cached")).split("/");
      if (cached === chunks && Number(chunks) > 0) break;
      if (Date.now() > deadline) throw new Error("the hub shows " + await row.textContent());
      await hub.waitForTimeout(500);
    }
  });

  await step("desktop-hub-fabric", hub, async () => {
    await open(hub, HUB, "fabric");
    await loaded(hub, "fabric");
    const f = main(hub, "fabric");
    await f.locator("svg.fabric .node.self").waitFor();
    // The spoke as the hub sees it (GET /api/v1/hub/spokes), its details a
    // click away.
    await f.locator("svg.fabric .node.spoke", { hasText: "us-east-1" }).waitFor();
    await f.locator("a[data-spoke]", { hasText: "us-east-1" }).click();
    await f.getByRole("heading", { name: /^Spoke / }).waitFor({ timeout: TIMEOUT });
    const details = await f.locator("section", { has: hub.getByRole("heading", { name: /^Spoke / }) }).textContent();
    if (!/Residency denials\s*[1-9]/.test(details)) throw new Error("the spoke's details show no denials: " + details);
  });

  await step("desktop-hub-overview-charts", hub, async () => {
    await open(hub, HUB, "overview");
    await drawn(hub, "overview", "Throughput per protocol");
  });

  await step("desktop-spoke-cache-charts", spoke, async () => {
    await open(spoke, SPOKE, "cache");
    await drawn(spoke, "cache", "Hit ratio per tier", "Prefetch precision per expert", "Prefetched per expert");
  });

  for (const name of ["overview", "governance", "access", "cache"]) {
    await step("desktop-spoke-" + name, spoke, async () => {
      await open(spoke, SPOKE, name);
      await loaded(spoke, name);
      await fitsWidth(spoke);
    });
  }
  await step("desktop-sign-out", spoke, async () => {
    await spoke.getByRole("button", { name: "Sign out" }).click();
    await spoke.getByRole("button", { name: "Sign in" }).waitFor();
  });
  await context.close();
}

// A user who is not an administrator: signs in, browses, and is told
// plainly that the administration pages are not theirs (each refused call
// logs its 403 in the browser).
async function reader(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  watch(page, "reader");
  await step("reader-login", page, async () => {
    await signIn(page, READER);
    await main(page, "overview").getByText(READER.user, { exact: true }).waitFor();
  });
  await step("reader-data-browse", page, async () => {
    await open(page, READER, "data/data/datasets");
    await loaded(page, "data");
    await main(page, "data").locator('[data-entry="README.txt"]').click();
    await main(page, "data").getByRole("heading", { name: "Versions" }).waitFor({ timeout: TIMEOUT });
    await main(page, "data").getByText("Pin and evict are for administrators.").waitFor();
  });
  await step("reader-governance-forbidden", page, async () => {
    expected = { status: 403, path: /^\/api\/v1\/residency$/ };
    await open(page, READER, "governance");
    await loaded(page, "governance");
    const said = await main(page, "governance").locator("[data-forbidden]").textContent({ timeout: TIMEOUT });
    if (!said.startsWith("Forbidden")) throw new Error("the refusal reads " + said);
    expected = null;
  });
  // The access page shows a reader their own tokens (this session's among
  // them), makes a new one, and no users or audit log.
  await step("reader-access-own-tokens", page, async () => {
    await open(page, READER, "access");
    await loaded(page, "access");
    const access = main(page, "access");
    await access.getByText("Users and the audit log are for administrators").waitFor({ timeout: TIMEOUT });
    await access.locator('[data-table="tokens"]').getByText("console (this session)").waitFor();
    await access.locator('[data-form="token"] input[name="token-name"]').fill("notebook");
    await access.locator('[data-form="token"] button[type="submit"]').click();
    await access.getByText(/New token .*: weft_/).waitFor({ timeout: TIMEOUT });
    const users = new Set(await access.locator('[data-table="tokens"] tbody tr td:nth-child(2)').allTextContents());
    if (users.size !== 1 || !users.has(READER.user)) throw new Error("tokens of others shown: " + [...users]);
    if (await access.locator('[data-table="users"], [data-table="audit"]').count()) throw new Error("administration shown");
    await access.locator('[data-table="tokens"]').getByText("notebook").waitFor();
  });
  // At the spoke a reader does not see the mounts, so the console asks for
  // a mounted file's versions, which a spoke does not keep (400).
  await step("reader-spoke-file", page, async () => {
    await signIn(page, { ...READER, url: SPOKE.url });
    expected = { status: 400, path: /^\/api\/v1\/versions\/data\/datasets\/train\/shard-000\.bin$/ };
    await open(page, SPOKE, "data/data/datasets/train/shard-000.bin");
    await main(page, "data").getByRole("heading", { name: "Versions" }).waitFor({ timeout: TIMEOUT });
    await main(page, "data").getByText(/keeps no older versions/).waitFor();
    expected = null;
  });
  await context.close();
}

async function mobile(browser) {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  const page = await context.newPage();
  watch(page, "mobile");
  await step("mobile-login", page, async () => {
    await signIn(page, SPOKE);
    await fitsWidth(page);
  });
  for (const name of PAGES) {
    await step("mobile-" + name, page, async () => {
      await open(page, SPOKE, name === "data" ? "data/data/datasets/train" : name);
      await loaded(page, name);
      if (name === "fabric") await page.locator("svg.fabric").waitFor();
      await fitsWidth(page);
    });
  }
  await context.close();
}

const browser = await chromium.launch({
  executablePath: env.WEFT_CHROMIUM,
  headless: true,
  // Root in a container has no user namespaces for Chromium's sandbox.
  args: process.getuid && process.getuid() === 0 ? ["--no-sandbox"] : [],
});
let failed = false;
try {
  await desktop(browser);
  await reader(browser);
  await mobile(browser);
} catch (e) {
  console.log(String(e.stack || e));
  failed = true;
} finally {
  await browser.close();
}
if (problems.length) {
  console.log("browser console errors:\n  " + problems.join("\n  "));
  failed = true;
}
process.exit(failed ? 1 : 0);
