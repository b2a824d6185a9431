// pipeline:
// backends: interp,cpu
// bug: the f16 (and f64) attention kernel named the loops of both of its products i, j, k, and the default schedule (which finds loops by name) failed with ScheduleError; fixed in tensorium/lowering/attention.py and linalg.py (emit_matmul's prefix)
module {
  func.func @main(%q: tensor<2x3x4xf16>, %k: tensor<5x4xf16>, %v: tensor<5x2xf16>) -> tensor<2x3x2xf16> {
    %0 = graph.attention %q, %k, %v {scale = 0.5, causal = true} : (tensor<2x3x4xf16>, tensor<5x4xf16>, tensor<5x2xf16>) -> tensor<2x3x2xf16>
    func.return %0 : tensor<2x3x2xf16>
  }
}
