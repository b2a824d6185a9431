// Debian's headless chromium with WebGPU on SwiftShader, through playwright-core (never a downloaded browser):
// the browser of run-chromium.mjs and bench-chromium.mjs. TENSORIUM_CHROMIUM overrides /usr/bin/chromium.

import { chromium } from "playwright-core";

export const CHROMIUM_FLAGS = [
  "--headless=new",
  "--enable-unsafe-webgpu",
  "--use-webgpu-adapter=swiftshader",
  "--no-sandbox",
  // no connections of chromium's own (there is no network to reach on test machines)
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

/** A launched browser (close it when done). */
export function launchChromium() {
  return chromium.launch({ executablePath: process.env.TENSORIUM_CHROMIUM ?? "/usr/bin/chromium", args: CHROMIUM_FLAGS });
}
