// Tensorium's WebGPU runtime: runs a compiled model, as the Python runtime does, on any GPUDevice
// (navigator.gpu in a browser, the npm `webgpu` package's Dawn under Node). No dependencies.
//
// What it loads (written by `tensorium compile MODEL -t webgpu -o site/`, see docs/webgpu_backend.md):
//   - an executable folder: plan.json (buffers, steps, kernels and their launch data), weights.bin
//     (the small constants, one after another) and kernels/<name>.wgsl;
//   - an artifact folder: metadata.json (the model's inputs and outputs by name), constants/NAME.npy
//     (the large constants, bound after the inputs) and its executable in webgpu/.
//
// A `source` is a base URL (files are fetched relative to it) or a function (path) => ArrayBuffer.
//
//   import { loadArtifact, requestDevice } from "./tensorium-webgpu.js";
//   const model = await loadArtifact("./", navigator.gpu);
//   const [y] = await model.run([new Float32Array(model.inputs[0].size)]);

export const EXECUTABLE_FORMAT = "tensorium-webgpu-executable";
export const ARTIFACT_FORMAT = "tensorium-artifact";

/** Array classes of the plan's storage dtypes (f16 is read and written as its bits). */
const ARRAYS = {
  float32: Float32Array,
  float16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  bool: Uint8Array,
  int8: Int8Array,
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int64: BigInt64Array,
};

/** The dtypes of .npy descriptors the runtime reads and writes. */
const NPY_DTYPES = {
  "<f4": "float32",
  "<f2": "float16",
  "<i4": "int32",
  "<u4": "uint32",
  "|b1": "bool",
  "|i1": "int8",
  "|u1": "uint8",
  "<i2": "int16",
  "<u2": "uint16",
  "<i8": "int64",
};

/** An error of the runtime: a malformed file, a wrong input, a device without what the model needs. */
export class TensoriumError extends Error {
  constructor(message) {
    super(message);
    this.name = "TensoriumError";
  }
}

function arrayClass(dtype, what) {
  const cls = ARRAYS[dtype];
  if (!cls) throw new TensoriumError(`${what}: dtype ${dtype} is not supported by the WebGPU runtime`);
  return cls;
}

function product(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

/** The size of dim `d` (a number, a named dim, or a product of them such as "8*batch*seq") given `bindings`. */
function dimSize(d, bindings) {
  if (typeof d === "number") return d;
  if (d in bindings) return bindings[d];
  if (!d.includes("*")) return undefined;
  return product(d.split("*").map((part) => (/^[0-9]+$/.test(part) ? Number(part) : bindings[part])));
}

function ceil4(n) {
  return Math.ceil(n / 4) * 4;
}

function camel(name) {
  return name.replace(/_([a-z])/g, (_, c) => c.toUpperCase());
}

/** A reader of `source`'s files as ArrayBuffers: fetch relative to a base URL, or the function itself. */
export function fileReader(source) {
  if (typeof source === "function") return source;
  const base = String(source).endsWith("/") ? String(source) : `${source}/`;
  return async (path) => {
    const url = new URL(path, new URL(base, globalThis.location?.href ?? undefined));
    const response = await fetch(url);
    if (!response.ok) throw new TensoriumError(`${url}: ${response.status} ${response.statusText}`);
    return response.arrayBuffer();
  };
}

function subReader(read, folder) {
  return (path) => read(`${folder}/${path}`);
}

async function readJSON(read, path, format, what) {
  let data;
  try {
    data = JSON.parse(new TextDecoder().decode(await read(path)));
  } catch (e) {
    throw new TensoriumError(`${path}: not valid JSON (${e.message})`);
  }
  if (data?.format !== format) throw new TensoriumError(`${path}: not ${what} (format ${data?.format})`);
  return data;
}

/** The WebGPU limits (camelCase) and features a plan's target needs, from its target record. */
export function requirements(plan) {
  const limits = {};
  for (const [name, value] of plan.target.limits) limits[camel(name)] = value;
  return { limits, features: [...plan.target.features] };
}

/**
 * A device for `plan` from `gpu` (navigator.gpu, or Dawn's under Node): limits above the adapter's
 * defaults are asked for; an adapter without a limit or feature is a TensoriumError naming it.
 */
export async function requestDevice(gpu, plan) {
  if (!gpu) throw new TensoriumError("no WebGPU here (navigator.gpu is missing; a secure context is needed)");
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) throw new TensoriumError("no WebGPU adapter");
  const { limits, features } = requirements(plan);
  const requiredLimits = {};
  for (const [name, value] of Object.entries(limits)) {
    const offered = adapter.limits[name];
    if (offered === undefined) continue;
    if (offered < value) {
      throw new TensoriumError(`the WebGPU adapter offers ${name} = ${offered}, but the model needs ${value}`);
    }
    requiredLimits[name] = value;
  }
  for (const feature of features) {
    if (!adapter.features.has(feature)) {
      throw new TensoriumError(`the WebGPU adapter lacks the feature ${feature} that the model needs`);
    }
  }
  return adapter.requestDevice({ requiredFeatures: features, requiredLimits });
}

async function deviceFrom(gpuOrDevice, plan) {
  return typeof gpuOrDevice?.createBuffer === "function" ? gpuOrDevice : requestDevice(gpuOrDevice, plan);
}

const I32_MIN = -(2n ** 31n);
const I32_MAX = 2n ** 31n - 1n;

/**
 * The bytes a shader reads for `array` of `dtype` (bool as one u32 per element; int64 as the int32 WebGPU
 * holds it in, an error naming `what` and the value where one does not fit 32 bits: never a silent narrowing).
 */
function toStorage(array, dtype, what) {
  if (dtype === "int64") {
    const held = new Int32Array(array.length);
    for (let i = 0; i < array.length; i++) {
      const v = array[i];
      if (v < I32_MIN || v > I32_MAX) {
        throw new TensoriumError(`${what} holds ${v}, outside the 32-bit range WebGPU holds int64 in [${I32_MIN}, ${I32_MAX}]`);
      }
      held[i] = Number(v);
    }
    return held;
  }
  if (dtype !== "bool") return array;
  return Uint32Array.from(array, (v) => (v ? 1 : 0));
}

/**
 * Write `width`-bit fields `get(row, e)` of `rows` rows of `count` elements as dense bit streams into `out`:
 * row r's stream starts at word `r * stride + start` (element e at bits [e w, e w + w), low bits first).
 */
function packStream(get, rows, count, width, out, stride, start) {
  const mask = (1 << width) - 1;
  for (let r = 0; r < rows; r++) {
    for (let e = 0; e < count; e++) {
      const value = get(r, e) & mask;
      const offset = e * width;
      const word = r * stride + start + (offset >>> 5);
      const shift = offset & 31;
      out[word] |= value << shift;
      if (shift + width > 32) out[word + 1] |= value >>> (32 - shift);
    }
  }
}

/**
 * The u32 words of k-bit `codes` (an Int8Array or Uint8Array of the tensor's shape) in the layout `packing`
 * names (plan.json's `packed` entry: layout, bits, shape, lanes), as the Python runtime packs them
 * (tensorium.ir.dialects.quant.layouts): stream, planes, shards or interleaved.
 */
export function packCodes(codes, packing) {
  const { layout, bits, shape, lanes } = packing;
  const count = shape[shape.length - 1];
  const rows = product(shape.slice(0, -1));
  const words = (width) => Math.ceil((count * width) / 32);
  const code = (r, e) => codes[r * count + e] & ((1 << bits) - 1);
  if (layout === "stream") {
    const out = new Uint32Array(rows * words(bits));
    packStream(code, rows, count, bits, out, words(bits), 0);
    return out;
  }
  if (layout === "planes") {
    const plane = rows * words(1);
    const out = new Uint32Array(bits * plane);
    for (let b = 0; b < bits; b++) {
      packStream((r, e) => code(r, e) >>> b, rows, count, 1, out.subarray(b * plane), words(1), 0);
    }
    return out;
  }
  if (layout === "shards") {
    const widths = bits === 8 ? [8] : [4, 2, 1].filter((w) => bits & w);
    const stride = widths.reduce((total, w) => total + words(w), 0);
    const out = new Uint32Array(rows * stride);
    let start = 0;
    let low = 0;
    for (const width of widths) {
      const from = low;
      packStream((r, e) => code(r, e) >>> from, rows, count, width, out, stride, start);
      start += words(width);
      low += width;
    }
    return out;
  }
  if (layout === "interleaved") {
    const [height] = shape;
    const groups = Math.ceil(height / lanes);
    const blocks = Math.ceil(count / 32);
    const stride = blocks * bits;
    const stream = new Uint32Array(groups * lanes * stride);
    packStream(code, height, count, bits, stream, stride, 0);
    const out = new Uint32Array(stream.length);
    for (let g = 0; g < groups; g++)
      for (let b = 0; b < blocks; b++)
        for (let w = 0; w < bits; w++)
          for (let l = 0; l < lanes; l++) out[((g * blocks + b) * bits + w) * lanes + l] = stream[(g * lanes + l) * stride + b * bits + w];
    return out;
  }
  throw new TensoriumError(`unknown k-bit layout ${layout}`);
}

/** What a caller gives for plan buffer `buffer`: its own description, or for a packed k-bit one its codes'. */
function inputOf(buffer) {
  if (!buffer.packed) return buffer;
  const { type, shape, signed } = buffer.packed;
  return { type, shape, dtype: signed ? "int8" : "uint8", bytes: product(shape), packed: buffer.packed };
}

function fromStorage(bytes, buffer, shape = buffer.shape) {
  const count = product(shape);
  if (buffer.dtype === "bool") return Uint8Array.from(new Uint32Array(bytes, 0, count), (v) => (v ? 1 : 0));
  if (buffer.dtype === "int64") return BigInt64Array.from(new Int32Array(bytes, 0, count), (v) => BigInt(v));
  return new (arrayClass(buffer.dtype, buffer.type))(bytes, 0, count);
}

/** A loaded executable (see the header): `run(arrays)` takes typed arrays in plan input order. */
export class Executable {
  constructor(device, plan, weights, sources, variants = {}) {
    this.device = device;
    this.plan = plan;
    this.variants = variants;
    this.choices = {};
    this.weights = weights;
    this.inputs = plan.inputs.map((b) => inputOf(plan.buffers[b]));
    this.outputs = plan.outputs.map((b) => plan.buffers[b]);
    this.usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    this.modules = {};
    for (const step of plan.steps) {
      if (!plan.kernels[step.kernel].pieces) {
        this.modules[step.kernel] ??= device.createShaderModule({ code: sources[step.kernel], label: step.kernel });
      }
    }
    this.pipelines = {};
    this.shapesKey = null;
    if (!plan.buffers.some((b) => b.shape.some((d) => typeof d !== "number"))) this.allocate({});
  }

  /** Every plan buffer's shape with the named dims `bindings` gives. */
  shapes(bindings) {
    return this.plan.buffers.map((b) => b.shape.map((d) => dimSize(d, bindings)));
  }

  /**
   * GPU buffers for the sizes `bindings` gives the named dims (all of them for static plans), the constants
   * uploaded, and every step's launch; done again only when the shapes change.
   */
  allocate(bindings) {
    const { device, plan } = this;
    const shapes = this.shapes(bindings);
    const key = JSON.stringify(shapes);
    if (key === this.shapesKey) return;
    for (const buffer of [...(this.buffers ?? []), ...(this.readback ?? [])]) buffer.destroy();
    this.shapesKey = key;
    this.current = shapes;
    const limits = Object.fromEntries(plan.target?.limits ?? []);
    this.perDimension = limits.max_compute_workgroups_per_dimension ?? 65535;
    this.sizes = plan.buffers.map((b, n) => (b.shape.every((d) => typeof d === "number") ? b.bytes : b.bytes * product(shapes[n])));
    const binding = limits.max_storage_buffer_binding_size ?? 134217728;
    for (const [n, b] of plan.buffers.entries()) {
      // a named dim is at most what keeps its tensor within the binding size (its other dims 1): the compiler's
      // proofs about i64 held in i32 assume it (dim_bound in tensorium/lowering/webgpu_int64.py)
      const fixed = product(b.shape.filter((d) => typeof d === "number"));
      const bound = fixed ? Math.min(2 ** 31 - 1, Math.floor(binding / (b.bytes * fixed))) : 2 ** 31 - 1;
      b.shape.forEach((d, axis) => {
        if (typeof d !== "number" && shapes[n][axis] > bound) {
          throw new TensoriumError(
            `tensor #${n} (${b.type}) of shape [${shapes[n]}]: dim ${d} = ${shapes[n][axis]} (axis ${axis}) is over ${bound}, the most that fits the binding size ${binding}`,
          );
        }
      });
      if (product(shapes[n]) >= 2 ** 31) {
        throw new TensoriumError(`tensor #${n} (${b.type}) of shape [${shapes[n]}] has too many elements for WebGPU's 32-bit indices`);
      }
    }
    this.buffers = this.sizes.map((bytes) => device.createBuffer({ size: Math.max(4, ceil4(bytes)), usage: this.usage }));
    for (const c of plan.constants) {
      device.queue.writeBuffer(this.buffers[c.buffer], 0, this.weights, c.offset, ceil4(c.bytes));
    }
    const viewOf = new Map(plan.views.map(([buffer, source, offset]) => [buffer, { buffer, source, offset }]));
    this.launches = plan.steps.map((step) => {
      const kernel = plan.kernels[step.kernel];
      const copies = step.args.filter((b) => viewOf.has(b)).map((b) => viewOf.get(b));
      if (kernel.pieces) {
        // a concat of contiguous runs of its result: buffer copies, no shader
        const result = step.args[step.inputs];
        const pieces = kernel.pieces.map((at, n) => ({ source: step.args[n], result, at, bytes: this.sizes[step.args[n]] }));
        return { pieces, copies };
      }
      const choice = this.choices[step.kernel] ?? -1;
      const chosen = choice < 0 ? kernel : this.variants[step.kernel][choice];
      return this.shaderLaunch(step, chosen, this.moduleOf(step.kernel, choice), copies);
    });
    this.readback = plan.outputs.map((b) =>
      device.createBuffer({ size: Math.max(4, ceil4(this.sizes[b])), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }),
    );
  }

  /** The shader module of kernel `name` (choice -1) or of its variant `choice`. */
  moduleOf(name, choice) {
    if (choice < 0) return this.modules[name];
    const variant = this.variants[name][choice];
    variant.module ??= this.device.createShaderModule({ code: variant.wgsl, label: name });
    return variant.module;
  }

  /**
   * The grid of `kernel` for `step`: its static one, or for a grid sized at run time the one its dispatch
   * expression gives for the current shapes (as webgpu_schedule.dynamic_grid computes it).
   */
  gridOf(step, kernel) {
    if (!kernel.dispatch) return kernel.grid;
    const blocks = Math.ceil(Math.max(this.evaluate(kernel.dispatch, step), 0) / kernel.workgroup[0]);
    const gx = Math.min(Math.max(blocks, 1), this.perDimension);
    const gy = Math.ceil(blocks / gx);
    if (gy > this.perDimension) {
      throw new TensoriumError(`kernel ${step.kernel}: ${blocks} workgroups do not fit a 2-D grid of max_compute_workgroups_per_dimension = ${this.perDimension}`);
    }
    return [gx, gy, 1];
  }

  /** The value of a size expression of plan.json (dispatch, scratch_sizes) for `step`'s arguments now. */
  evaluate(expression, step) {
    const shapes = step.args.map((b) => this.current[b]);
    const value = (e) => {
      if (typeof e === "number") return e;
      const [name, a, b] = e;
      if (name === "dim") return shapes[a][b];
      const x = value(a);
      const y = value(b);
      const ops = {
        add: () => x + y,
        sub: () => x - y,
        mul: () => x * y,
        div: () => (y === 0 ? 0 : Math.trunc(x / y)),
        rem: () => (y === 0 ? x : x - Math.trunc(x / y) * y),
        min: () => Math.min(x, y),
        max: () => Math.max(x, y),
      };
      return ops[name]();
    };
    return value(expression);
  }

  /** The launch of `step` with `kernel`'s launch data (the plan's or a variant's) and shader `module`. */
  shaderLaunch(step, kernel, module, copies) {
    const { device } = this;
    const key = `${step.kernel}/${this.variants[step.kernel]?.indexOf(kernel) ?? -1}`;
    this.pipelines[key] ??= device.createComputePipeline({ label: step.kernel, layout: "auto", compute: { module, entryPoint: "main" } });
    const pipeline = this.pipelines[key];
    const bound = kernel.bindings.map((p) => this.buffers[step.args[p]]);
    kernel.scratch.forEach((bytes, n) => {
      const expression = kernel.scratch_sizes?.[n];
      const size = expression ? Math.max(4, this.evaluate(expression, step)) : bytes;
      bound.push(device.createBuffer({ size: ceil4(size), usage: this.usage }));
    });
    // a kernel with run-time checks: a status buffer, where a failed check stores its number (1-based)
    const status = kernel.checks?.length ? device.createBuffer({ size: 4, usage: this.usage }) : null;
    if (status) bound.push(status);
    let uniform = null;
    if (kernel.dims) {
      const values = this.dimValues(step, kernel);
      uniform = device.createBuffer({ size: values.byteLength, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(uniform, 0, values);
      bound.push(uniform);
    }
    const group = device.createBindGroup({
      layout: pipeline.getBindGroupLayout(0),
      entries: bound.map((buffer, binding) => ({ binding, resource: { buffer } })),
    });
    const runTimeDims = this.usesRunTimeDims(step); // decided once per allocation, not per launch per run
    return { pipeline, group, grid: this.gridOf(step, kernel), copies, step, kernel, uniform, status, runTimeDims };
  }

  /** The `dims` uniform of `kernel` for `step` at the current shapes (whole vec4s). */
  dimValues(step, kernel) {
    const values = new Int32Array(Math.ceil(kernel.dims.length / 4) * 4);
    kernel.dims.forEach(([p, axis], n) => (values[n] = this.current[step.args[p]][axis]));
    return values;
  }

  /** `bindings` with each dim computed at run time (plan.dims) at its bound, the size its tensors are allocated at. */
  bounded(bindings) {
    const out = { ...bindings };
    for (const [name, , bound] of this.plan.dims ?? []) out[name] = typeof bound === "number" ? bound : out[bound];
    return out;
  }

  /** Whether `step`'s buffers have a dim computed at run time. */
  usesRunTimeDims(step) {
    const names = new Set((this.plan.dims ?? []).map(([name]) => name));
    return step.args.some((b) => this.plan.buffers[b].shape.some((d) => names.has(d)));
  }

  /** Submit `encoder`, then read the size dim `[name, size, bound]` of plan.dims that the GPU wrote; checked. */
  async readDim(encoder, [name, size, bound], limit) {
    const { device } = this;
    const staging = device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    encoder.copyBufferToBuffer(this.buffers[size], 0, staging, 0, 4);
    device.queue.submit([encoder.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const value = new Int32Array(staging.getMappedRange().slice(0))[0];
    staging.unmap();
    staging.destroy();
    if (!(value >= 0 && value <= limit)) {
      throw new TensoriumError(`dim ${name} computed at run time is ${value}, outside [0, ${limit}] (its bound ${bound})`);
    }
    return value;
  }

  /** The launches of kernel `name`'s steps with candidate `choice` (-1: the plan's shader, else a variant). */
  async candidate(name, choice) {
    const kernel = choice < 0 ? this.plan.kernels[name] : this.variants[name][choice];
    const module = this.moduleOf(name, choice);
    this.device.pushErrorScope("validation");
    const launches = new Map();
    this.plan.steps.forEach((step, n) => {
      if (step.kernel === name) launches.set(n, this.shaderLaunch(step, kernel, module, this.launches[n].copies));
    });
    return (await this.device.popErrorScope()) ? null : launches;
  }

  /** Mean ms of `repeats` dispatches of `launch` (after one more), to the GPU's completion. */
  async timeLaunch(launch, repeats) {
    const run = async (count) => {
      const encoder = this.device.createCommandEncoder();
      const pass = encoder.beginComputePass();
      pass.setPipeline(launch.pipeline);
      pass.setBindGroup(0, launch.group);
      for (let n = 0; n < count; n++) pass.dispatchWorkgroups(...launch.grid);
      pass.end();
      this.device.queue.submit([encoder.finish()]);
      await this.device.queue.onSubmittedWorkDone();
    };
    await run(1);
    const start = performance.now();
    await run(repeats);
    return (performance.now() - start) / repeats;
  }

  /**
   * Try each tunable kernel's variants (variants.json, written with the site) within `budgetMs`, timing
   * each candidate's dispatches, and keep the fastest; kernels are tried in plan order until the budget
   * is spent. Resolves to {spentMs, tried, choices} (choices: kernel name -> variant index, -1 the plan's).
   */
  async tune({ budgetMs = 10000, repeats = 5 } = {}) {
    const start = performance.now();
    let tried = 0;
    for (const name of Object.keys(this.variants)) {
      let best = { ms: Infinity, choice: -1, launches: null };
      for (let choice = -1; choice < this.variants[name].length; choice++) {
        if (performance.now() - start > budgetMs) break;
        const launches = await this.candidate(name, choice);
        if (!launches) continue; // a variant this device refuses
        const [first] = launches.values();
        const ms = await this.timeLaunch(first, repeats);
        tried += 1;
        if (ms < best.ms) best = { ms, choice, launches };
      }
      if (best.launches) {
        for (const [n, launch] of best.launches) this.launches[n] = launch;
        this.choices[name] = best.choice;
      }
    }
    return { spentMs: performance.now() - start, tried, choices: { ...this.choices } };
  }

  /** Use the variants `choices` names (kernel name -> variant index, from an earlier tune), where they exist. */
  async apply(choices) {
    for (const [name, choice] of Object.entries(choices)) {
      if (!(name in this.variants) || choice >= this.variants[name].length) continue;
      const launches = await this.candidate(name, choice);
      if (!launches) continue;
      for (const [n, launch] of launches) this.launches[n] = launch;
      this.choices[name] = choice;
    }
  }

  /**
   * Check `inputs` against the plan's inputs: their number, array class and element count; an input is a
   * typed array, or {data, shape} (needed where its type has more than one dynamic dim). Returns the typed
   * arrays and the sizes they give the named dims.
   */
  check(inputs) {
    if (inputs.length !== this.inputs.length) {
      throw new TensoriumError(`the model takes ${this.inputs.length} inputs, got ${inputs.length}`);
    }
    const bindings = {};
    const arrays = inputs.map((input, n) => {
      const want = this.inputs[n];
      const array = input?.data ?? input;
      const cls = arrayClass(want.dtype, want.type);
      if (!(array instanceof cls)) {
        throw new TensoriumError(`input #${n}: expected a ${cls.name} for ${want.type}, got ${array?.constructor?.name}`);
      }
      const named = want.shape.filter((d) => typeof d !== "number");
      let shape = named.length ? input?.shape : want.shape; // a static input is checked by its length
      if (!shape && named.length === 1) {
        const known = product(want.shape.filter((d) => typeof d === "number"));
        shape = want.shape.map((d) => (typeof d === "number" ? d : known ? array.length / known : 0));
      }
      shape ??= want.shape;
      if (shape.length !== want.shape.length || want.shape.some((d, a) => typeof d === "number" && d !== shape[a])) {
        throw new TensoriumError(`input #${n}: shape [${shape}] does not fit ${want.type}`);
      }
      want.shape.forEach((d, a) => {
        if (typeof d === "number") return;
        if (d in bindings && bindings[d] !== shape[a]) {
          throw new TensoriumError(`input #${n}: dim ${d} is ${shape[a]} here but ${bindings[d]} in an earlier input`);
        }
        bindings[d] = shape[a];
      });
      if (array.length !== product(shape) || !shape.every(Number.isInteger)) {
        throw new TensoriumError(`input #${n}: expected ${product(shape)} elements for ${want.type}, got ${array.length}`);
      }
      return array;
    });
    return { arrays, bindings };
  }

  /**
   * Record every launch of a run (the views' copies, then the dispatch or the pieces' copies); after a step that
   * writes the size of a dim computed at run time (plan.dims), submit, read the size back into `known` and go on
   * with a new encoder, whose launches get grids and dims uniforms for it. Resolves to the last encoder.
   */
  async encodeLaunches(sizes, known, bounded) {
    const { device, plan } = this;
    let encoder = device.createCommandEncoder();
    for (const launch of this.launches) {
      const { pipeline, group, copies, pieces } = launch;
      let grid = launch.grid;
      if (sizes.size && launch.runTimeDims) {
        grid = this.gridOf(launch.step, launch.kernel);
        if (launch.uniform) device.queue.writeBuffer(launch.uniform, 0, this.dimValues(launch.step, launch.kernel));
      }
      for (const view of copies) {
        // this run's bytes (a view of a dynamic tensor is a reshape of it, at offset 0)
        const t = plan.buffers[view.buffer];
        const itemsize = t.shape.every((d) => typeof d === "number") ? t.bytes / Math.max(1, product(t.shape)) : t.bytes;
        const bytes = ceil4(this.sizes[view.buffer]);
        if (bytes) encoder.copyBufferToBuffer(this.buffers[view.source], view.offset * itemsize, this.buffers[view.buffer], 0, bytes);
      }
      if (pieces) {
        for (const p of pieces) encoder.copyBufferToBuffer(this.buffers[p.source], 0, this.buffers[p.result], p.at, p.bytes);
        continue;
      }
      if (!grid.includes(0)) {
        const pass = encoder.beginComputePass();
        pass.setPipeline(pipeline);
        pass.setBindGroup(0, group);
        pass.dispatchWorkgroups(...grid);
        pass.end();
      }
      for (const b of launch.step?.args.slice(launch.step.inputs) ?? []) {
        if (!sizes.has(b)) continue; // else a dim computed at run time: read back before what uses it
        const dim = sizes.get(b);
        known[dim[0]] = await this.readDim(encoder, dim, bounded[dim[0]]);
        this.current = this.shapes(known);
        encoder = device.createCommandEncoder();
      }
    }
    return encoder;
  }

  /**
   * Run on `inputs` (plan input order: typed arrays, or {data, shape}); resolves to new typed arrays, one per
   * output (their shapes, with dynamic dims bound, in `outputShapes`).
   */
  async run(inputs) {
    const { arrays, bindings } = this.check(inputs);
    const bounded = this.bounded(bindings);
    this.allocate(bounded);
    this.current = this.shapes(bounded);
    const { device, plan } = this;
    const sizes = new Map((plan.dims ?? []).map((dim) => [dim[1], dim]));
    const known = { ...bounded };
    arrays.forEach((array, n) => {
      const { dtype, packed } = this.inputs[n];
      const data = packed ? packCodes(array, packed) : toStorage(array, dtype, `input #${n} (${this.inputs[n].type})`);
      const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      const padded = bytes.byteLength % 4 ? Uint8Array.from({ length: ceil4(bytes.byteLength) }, (_, i) => bytes[i] ?? 0) : bytes;
      device.queue.writeBuffer(this.buffers[plan.inputs[n]], 0, padded);
    });
    const checked = this.launches.filter((launch) => launch.status);
    for (const launch of checked) device.queue.writeBuffer(launch.status, 0, new Uint32Array(1));
    device.pushErrorScope("validation");
    let encoder;
    try {
      encoder = await this.encodeLaunches(sizes, known, bounded);
    } catch (e) {
      await device.popErrorScope(); // a dim out of its bound, a grid too large: the scope still closes
      throw e;
    }
    this.outputShapes = this.plan.outputs.map((b) => this.current[b]);
    plan.outputs.forEach((b, n) => encoder.copyBufferToBuffer(this.buffers[b], 0, this.readback[n], 0, this.readback[n].size));
    const statuses = checked.length
      ? device.createBuffer({ size: 4 * checked.length, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST })
      : null;
    checked.forEach((launch, n) => encoder.copyBufferToBuffer(launch.status, 0, statuses, 4 * n, 4));
    device.queue.submit([encoder.finish()]);
    const error = await device.popErrorScope();
    if (error) throw new TensoriumError(`the WebGPU device refused the model: ${error.message}`);
    if (statuses) {
      await statuses.mapAsync(GPUMapMode.READ);
      const failed = new Uint32Array(statuses.getMappedRange().slice(0));
      statuses.unmap();
      statuses.destroy();
      const n = failed.findIndex((v) => v !== 0);
      if (n >= 0) {
        const { step, kernel } = checked[n];
        throw new TensoriumError(`kernel @${step.kernel} failed: ${kernel.checks[failed[n] - 1] ?? `check #${failed[n]}`}`);
      }
    }
    return Promise.all(
      this.readback.map(async (buffer, n) => {
        await buffer.mapAsync(GPUMapMode.READ);
        const out = fromStorage(buffer.getMappedRange().slice(0), this.outputs[n], this.outputShapes[n]);
        buffer.unmap();
        return out;
      }),
    );
  }

  /** Free the executable's GPU buffers (the device stays). */
  destroy() {
    for (const buffer of [...this.buffers, ...this.readback]) buffer.destroy();
  }
}

/**
 * Load an executable folder (plan.json, weights.bin, kernels/) from `source` and build it on `gpu`
 * (navigator.gpu or a GPUDevice already made). Shader errors are a TensoriumError naming the kernel.
 */
export async function loadExecutable(source, gpu) {
  const read = fileReader(source);
  const plan = await readJSON(read, "plan.json", EXECUTABLE_FORMAT, "a Tensorium WebGPU executable");
  const weights = await read(plan.weights);
  const sources = {};
  await Promise.all(
    Object.entries(plan.kernels).map(async ([name, kernel]) => {
      sources[name] = new TextDecoder().decode(await read(kernel.file));
    }),
  );
  const variants = await readVariants(read);
  const device = await deviceFrom(gpu, plan);
  device.pushErrorScope("validation");
  const executable = new Executable(device, plan, weights, sources, variants);
  const error = await device.popErrorScope();
  for (const [name, module] of Object.entries(executable.modules)) {
    const info = await module.getCompilationInfo?.();
    const bad = info?.messages?.find((m) => m.type === "error");
    if (bad) throw new TensoriumError(`kernel ${name}: line ${bad.lineNum}: ${bad.message}`);
  }
  if (error) throw new TensoriumError(`the WebGPU device refused the model: ${error.message}`);
  return executable;
}

/** The tuning variants beside a plan (variants.json and its WGSL), or none when there is no such file. */
async function readVariants(read) {
  let index;
  try {
    index = JSON.parse(new TextDecoder().decode(await read("variants.json")));
  } catch {
    return {};
  }
  for (const shaders of Object.values(index)) {
    for (const shader of shaders) shader.wgsl = new TextDecoder().decode(await read(shader.file));
  }
  return index;
}

/** A .npy file's dtype, shape and data (a typed array); little-endian C-order arrays only. */
export function parseNpy(bytes) {
  const view = new DataView(bytes);
  const magic = new Uint8Array(bytes, 0, 6);
  if (magic[0] !== 0x93 || String.fromCharCode(...magic.slice(1)) !== "NUMPY") {
    throw new TensoriumError("not a .npy file");
  }
  const major = view.getUint8(6);
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const start = major === 1 ? 10 : 12;
  const header = new TextDecoder().decode(new Uint8Array(bytes, start, headerLength));
  const descr = /'descr':\s*'([^']+)'/.exec(header)?.[1];
  const shapeText = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (/'fortran_order':\s*True/.test(header)) throw new TensoriumError(".npy arrays in Fortran order are not supported");
  const dtype = NPY_DTYPES[descr];
  if (!dtype || shapeText === undefined) throw new TensoriumError(`.npy dtype ${descr} is not supported`);
  const shape = shapeText.split(",").map((s) => s.trim()).filter(Boolean).map(Number);
  const cls = ARRAYS[dtype];
  const count = product(shape);
  const data = new cls(bytes.slice(start + headerLength, start + headerLength + count * cls.BYTES_PER_ELEMENT));
  return { dtype, shape, data };
}

/** `data` of `dtype` and `shape` as the bytes of a .npy file (version 1). */
export function toNpy(data, dtype, shape) {
  const descr = Object.keys(NPY_DTYPES).find((k) => NPY_DTYPES[k] === dtype);
  if (!descr) throw new TensoriumError(`dtype ${dtype} has no .npy descriptor here`);
  const dims = shape.length === 1 ? `${shape[0]},` : shape.join(", ");
  let header = `{'descr': '${descr}', 'fortran_order': False, 'shape': (${dims}), }`;
  header += " ".repeat(63 - ((10 + header.length) % 64)) + "\n";
  const out = new Uint8Array(10 + header.length + data.byteLength);
  out.set([0x93, ..."NUMPY"].map((c) => (typeof c === "number" ? c : c.charCodeAt(0))), 0);
  out.set([1, 0, header.length & 0xff, header.length >> 8], 6);
  out.set(new TextEncoder().encode(header), 10);
  out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), 10 + header.length);
  return out.buffer;
}

/** A loaded artifact: `run(arrays)` takes the model's own inputs; its large constants are bound after them. */
export class Model {
  constructor(metadata, executable, params) {
    this.metadata = metadata;
    this.executable = executable;
    this.params = params;
    const user = metadata.inputs.length;
    this.inputs = metadata.inputs.map((input, n) => ({ ...input, ...executable.inputs[n] }));
    this.outputs = metadata.outputs.map((output, n) => ({ ...output, ...executable.outputs[n] }));
    this.userInputs = user;
  }

  /** The shapes of the outputs of the last run (dynamic dims bound). */
  get outputShapes() {
    return this.executable.outputShapes;
  }

  /** Tune the kernels within a time budget (see Executable.tune). */
  tune(options) {
    return this.executable.tune(options);
  }

  /** Run on typed `arrays`, one per model input; resolves to one typed array per output. */
  async run(arrays) {
    if (arrays.length !== this.userInputs) {
      throw new TensoriumError(`the model takes ${this.userInputs} inputs, got ${arrays.length}`);
    }
    return this.executable.run([...arrays, ...this.params]);
  }
}

/** Load an artifact folder written with `-t webgpu` (see the header) from `source` onto `gpu`. */
export async function loadArtifact(source, gpu) {
  const read = fileReader(source);
  const metadata = await readJSON(read, "metadata.json", ARTIFACT_FORMAT, "a Tensorium artifact");
  if (!String(metadata.target).startsWith("webgpu")) {
    throw new TensoriumError(`metadata.json: the artifact was compiled for '${metadata.target}', not webgpu`);
  }
  const params = await Promise.all(metadata.constants.map(async (c) => parseNpy(await read(c.file)).data));
  const executable = await loadExecutable(subReader(read, "webgpu"), gpu);
  return new Model(metadata, executable, params);
}

/** The named dims of `model`'s inputs, in order of first appearance. */
export function namedDims(model) {
  return [...new Set(model.inputs.flatMap((input) => input.shape.filter((d) => typeof d !== "number")))];
}

/**
 * Random inputs for `model` (standard normal floats, small integers, random booleans); `dims` sizes the named
 * dims (each missing one is 1), and an input with a named dim is given as {data, shape}.
 */
export function randomInputs(model, seed = 1, dims = {}) {
  let state = seed >>> 0 || 1;
  const uniform = () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return ((state >>> 0) + 0.5) / 4294967296;
  };
  const normal = () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
  return model.inputs.map((input) => {
    const shape = input.shape.map((d) => dimSize(d, dims) ?? 1);
    const data = randomArray(input, product(shape));
    return input.shape.every((d) => typeof d === "number") ? data : { data, shape };
  });

  function randomArray(input, count) {
    const cls = arrayClass(input.dtype, input.type);
    if (input.dtype === "float32") return Float32Array.from({ length: count }, normal);
    if (input.dtype === "bool") return Uint8Array.from({ length: count }, () => (uniform() < 0.5 ? 1 : 0));
    if (input.dtype === "int64") return BigInt64Array.from({ length: count }, () => BigInt(Math.floor(uniform() * 10)));
    if (input.packed) {
      const { bits, signed } = input.packed;
      const low = signed ? -(1 << (bits - 1)) : 0;
      return cls.from({ length: count }, () => low + Math.floor(uniform() * (1 << bits)));
    }
    return cls.from({ length: count }, () => Math.floor(uniform() * 10));
  }
}
