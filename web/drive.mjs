// Drives headless Chromium through the DevTools protocol (over --remote-debugging-pipe, so no
// port and no browser download): opens a page, waits until its title says `wgsplat: ready` or
// `wgsplat: error: ...`, optionally waits for more frames, takes a screenshot, and prints one JSON
// line: {"title", "frameMs", "frames", "screenshot", "data" (every data attribute), ...}. Exits 0 when the page said ready, 1 when it
// said error, 2 on a timeout or a browser failure.
//
//   node web/drive.mjs --url URL [--screenshot FILE] [--timeout-ms N] [--frames N]
//        [--until TITLE_PREFIX] [--width W --height H] [--chromium PATH]
//
// --until waits for another title than `wgsplat: ready` (e.g. `wgsplat: trained`); an error
// title still ends the wait.
import { spawn } from "node:child_process";
import { writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []),
);
const url = args.url;
if (!url) {
  console.error("usage: node web/drive.mjs --url URL [--screenshot FILE] [--timeout-ms N] [--frames N]");
  process.exit(2);
}
const timeoutMs = Number(args["timeout-ms"] ?? 120000);
const width = Number(args.width ?? 1000);
const height = Number(args.height ?? 700);
const profile = mkdtempSync(join(tmpdir(), "wgsplat-chromium-"));
const chromium = spawn(
  args.chromium ?? "chromium",
  [
    "--headless=new", "--no-sandbox", "--enable-unsafe-webgpu", "--enable-features=Vulkan",
    "--use-vulkan=swiftshader", "--use-angle=swiftshader", "--remote-debugging-pipe",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--no-first-run", "--disable-quic", `--user-data-dir=${profile}`,
    `--window-size=${width},${height}`, "about:blank",
  ],
  { stdio: ["ignore", "ignore", "pipe", "pipe", "pipe"] },
);
let stderr = "";
chromium.stdio[2].on("data", (d) => { stderr = (stderr + d).slice(-4000); });
const toBrowser = chromium.stdio[3];
const fromBrowser = chromium.stdio[4];

let nextId = 1;
const waiting = new Map();
let pending = Buffer.alloc(0);
fromBrowser.on("data", (chunk) => {
  pending = Buffer.concat([pending, chunk]);
  let end;
  while ((end = pending.indexOf(0)) >= 0) {
    const message = JSON.parse(pending.subarray(0, end).toString("utf8"));
    pending = pending.subarray(end + 1);
    if (message.id && waiting.has(message.id)) {
      const { resolve, reject } = waiting.get(message.id);
      waiting.delete(message.id);
      message.error ? reject(new Error(JSON.stringify(message.error))) : resolve(message.result);
    }
  }
});
function send(method, params = {}, sessionId = undefined) {
  const id = nextId++;
  toBrowser.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + "\0");
  return new Promise((resolve, reject) => waiting.set(id, { resolve, reject }));
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const started = Date.now();

function finish(code, report) {
  console.log(JSON.stringify(report));
  try { chromium.kill("SIGKILL"); } catch {}
  try { rmSync(profile, { recursive: true, force: true }); } catch {}
  process.exit(code);
}
const deadline = setTimeout(() => finish(2, { title: null, error: `timed out after ${timeoutMs} ms`, stderr }), timeoutMs);

try {
  const { targetInfos } = await send("Target.getTargets");
  const page = targetInfos.find((t) => t.type === "page");
  const { sessionId } = await send("Target.attachToTarget", { targetId: page.targetId, flatten: true });
  const evaluate = async (expression) =>
    (await send("Runtime.evaluate", { expression, returnByValue: true }, sessionId)).result.value;
  await send("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile: false }, sessionId);
  await send("Page.enable", {}, sessionId);
  await send("Page.navigate", { url }, sessionId);
  const until = args.until ?? "wgsplat: ready";
  let title = "";
  let lastLog = Date.now();
  while (!title.startsWith(until) && !title.startsWith("wgsplat: error")) {
    await sleep(100);
    title = (await evaluate("document.title")) ?? "";
    if (Date.now() - lastLog > 10000) {
      // Progress on standard error, for whoever waits on a long run.
      const iteration = await evaluate("document.documentElement.dataset.iteration");
      console.error(`drive.mjs: ${Math.round((Date.now() - started) / 1000)} s: "${title}", iteration ${iteration ?? "-"}`);
      lastLog = Date.now();
    }
  }
  const wantFrames = Number(args.frames ?? 0);
  while (wantFrames > 0 && Number((await evaluate("document.documentElement.dataset.frames")) ?? 0) < wantFrames) {
    await sleep(100);
  }
  await sleep(300);
  const report = {
    title,
    frameMs: Number(await evaluate("document.documentElement.dataset.frameMs")) || null,
    frames: Number(await evaluate("document.documentElement.dataset.frames")) || 0,
    path: (await evaluate("document.documentElement.dataset.path")) ?? null,
    shadersChecked: Number(await evaluate("document.documentElement.dataset.shadersChecked")) || 0,
    lossFirst: Number(await evaluate("document.documentElement.dataset.lossFirst")) || null,
    lossLast: Number(await evaluate("document.documentElement.dataset.lossLast")) || null,
    iteration: Number(await evaluate("document.documentElement.dataset.iteration")) || 0,
    trainSeconds: Number(await evaluate("document.documentElement.dataset.trainSeconds")) || null,
    status: (await evaluate("document.getElementById('status') && document.getElementById('status').textContent")) ?? null,
    screenshot: null,
    // Every data attribute of the root element, as the page wrote it.
    data: (await evaluate("Object.assign({}, document.documentElement.dataset)")) ?? {},
  };
  if (args.screenshot) {
    const shot = await send("Page.captureScreenshot", { format: "png" }, sessionId);
    writeFileSync(args.screenshot, Buffer.from(shot.data, "base64"));
    report.screenshot = args.screenshot;
  }
  clearTimeout(deadline);
  finish(title.startsWith(until) ? 0 : 1, report);
} catch (err) {
  finish(2, { title: null, error: String(err), stderr });
}
