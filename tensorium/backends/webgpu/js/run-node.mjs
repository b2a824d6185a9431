// Run a compiled model under Node on Dawn (the npm `webgpu` package), with tensorium-webgpu.js:
//
//   node run-node.mjs [--tune MS] FOLDER OUT_DIR [INPUT.npy ...]
//
// FOLDER is an artifact compiled with `-t webgpu` (metadata.json) or an executable folder (plan.json);
// the inputs are .npy files in input order; the outputs are written as OUT_DIR/out<N>.npy; --tune first
// tunes the kernels that have variants (variants.json) within MS milliseconds. Dawn's
// options come from TENSORIUM_DAWN_OPTIONS (comma-separated, e.g. backend=vulkan). Exit status 1 with one
// line on stderr when anything fails.

import { existsSync, mkdirSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";

import { create, globals } from "webgpu";

import { loadArtifact, loadExecutable, parseNpy, toNpy } from "./tensorium-webgpu.js";

async function main(argv) {
  const args = [...argv];
  const tuneAt = args.indexOf("--tune");
  const budgetMs = tuneAt >= 0 ? Number(args.splice(tuneAt, 2)[1]) : null;
  const [folder, outDir, ...inputFiles] = args;
  if (!folder || !outDir) throw new Error("usage: node run-node.mjs [--tune MS] FOLDER OUT_DIR [INPUT.npy ...]");
  Object.assign(globalThis, globals);
  const options = (process.env.TENSORIUM_DAWN_OPTIONS ?? "").split(",").filter(Boolean);
  const gpu = create(options);
  const read = async (path) => {
    const data = await readFile(join(folder, path));
    return data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength);
  };
  const isArtifact = existsSync(join(folder, "metadata.json"));
  const model = isArtifact ? await loadArtifact(read, gpu) : await loadExecutable(read, gpu);
  const inputs = [];
  for (const file of inputFiles) {
    const data = await readFile(file);
    const { data: array, shape } = parseNpy(data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength));
    inputs.push({ data: array, shape });
  }
  if (budgetMs !== null) {
    const report = await model.tune({ budgetMs });
    process.stderr.write(`tuned: ${JSON.stringify(report)}\n`);
  }
  const outputs = await model.run(inputs);
  mkdirSync(outDir, { recursive: true });
  await Promise.all(
    outputs.map((array, n) =>
      writeFile(join(outDir, `out${n}.npy`), new Uint8Array(toNpy(array, model.outputs[n].dtype, model.outputShapes[n]))),
    ),
  );
  (isArtifact ? model.executable : model).device.destroy();
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`${e.name ?? "Error"}: ${e.message}\n`);
    process.exit(1);
  },
);
