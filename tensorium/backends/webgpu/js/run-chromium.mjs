// Run a demo site (written by `tensorium compile MODEL -t webgpu -o site/`, served over HTTP) in headless
// chromium through playwright-core, with the system's chromium (never a downloaded browser):
//
//   node run-chromium.mjs URL OUT_DIR [--tune SECONDS] [--screenshot FILE] [INPUT.npy ...]
//
// With --tune, the page's Tune button first tunes the kernels within SECONDS (its line is printed); with
// inputs, the page runs the model on them and the outputs are written as OUT_DIR/out<N>.npy; with
// --screenshot, the page's Run button runs it on random inputs and the page is saved as a PNG. The browser
// is chromium.mjs's (Debian's chromium, SwiftShader's WebGPU adapter). Exit status 1 with
// one line on stderr when anything fails (the page's own error included).

import { mkdirSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

import { launchChromium } from "./chromium.mjs";

async function main(argv) {
  const args = [...argv];
  const shotAt = args.indexOf("--screenshot");
  const screenshot = shotAt >= 0 ? args.splice(shotAt, 2)[1] : null;
  const tuneAt = args.indexOf("--tune");
  const tune = tuneAt >= 0 ? args.splice(tuneAt, 2)[1] : null;
  const [url, outDir, ...inputFiles] = args;
  if (!url || !outDir) throw new Error("usage: node run-chromium.mjs URL OUT_DIR [--screenshot FILE] [INPUT.npy ...]");
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1000, height: 760 } });
    const problems = [];
    page.on("pageerror", (e) => problems.push(e.message));
    await page.goto(url);
    const ready = await page.evaluate(() => window.tensoriumReady.then(() => null, (e) => String(e.message ?? e)));
    if (ready !== null) throw new Error(`the page failed to load the model: ${ready}`);
    mkdirSync(outDir, { recursive: true });
    if (tune) {
      await page.fill("#budget", tune);
      await page.click("#tune");
      await page.waitForFunction(() => /^Done tuning/.test(document.getElementById("status").textContent) ||
        document.getElementById("status").className === "error");
      const text = await page.textContent("#status");
      if (!text.startsWith("Done")) throw new Error(`the page's tuning failed: ${text}`);
      process.stdout.write(`tuned: ${await page.textContent("#tuning")}\n`);
    }
    if (inputFiles.length) {
      const inputs = await Promise.all(inputFiles.map(async (f) => (await readFile(f)).toString("base64")));
      const outputs = await page.evaluate((given) => window.tensorium.runNpy(given), inputs);
      await Promise.all(outputs.map((text, n) => writeFile(join(outDir, `out${n}.npy`), Buffer.from(text, "base64"))));
    }
    if (screenshot) {
      await page.click("#run");
      await page.waitForFunction(() => /^(Done|Error)/.test(document.getElementById("status").textContent) ||
        document.getElementById("status").className === "error");
      const text = await page.textContent("#status");
      if (!text.startsWith("Done")) throw new Error(`the page's run failed: ${text}`);
      process.stdout.write(`outputs: ${await page.textContent("#outputs")}\n`);
      await page.screenshot({ path: screenshot, fullPage: true });
    }
    if (problems.length) throw new Error(`the page raised: ${problems[0]}`);
  } finally {
    await browser.close();
  }
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`${e.name ?? "Error"}: ${e.message}\n`);
    process.exit(1);
  },
);
