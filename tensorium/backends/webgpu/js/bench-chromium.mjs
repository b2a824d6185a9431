// Open a benchmark page in headless Debian chromium (chromium.mjs) and print what it
// reports: the page sets window.benchResult (any JSON) or window.benchError.
//
//   node bench-chromium.mjs URL [TIMEOUT_MS]

import { launchChromium } from "./chromium.mjs";

const [url, timeout = "300000"] = process.argv.slice(2);
const browser = await launchChromium();
try {
  const page = await browser.newPage();
  page.on("console", (m) => process.stderr.write(`page: ${m.text()}\n`));
  await page.goto(url);
  await page.waitForFunction(() => window.benchResult || window.benchError, null, { timeout: Number(timeout), polling: 500 });
  const error = await page.evaluate(() => window.benchError);
  if (error) throw new Error(error);
  process.stdout.write(`${JSON.stringify(await page.evaluate(() => window.benchResult))}\n`);
} catch (e) {
  process.stderr.write(`${e.message}\n`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
