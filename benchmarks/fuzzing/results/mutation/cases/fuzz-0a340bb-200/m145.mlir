// tensorium fuzz: mismatch at cpu
// output 3 (tensor<3x5x1xf32>): 8 of 15 elements differ; at [0, 0, 0] got 0.03866972774267197, expected 0.1165299117565155
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-4fsw1iw4/out/failures/001-mismatch-cpu.mlir
// pipeline: lower-to-loops
// seed: 1642285548
// backends: interp,cpu
// opt-level: 1
module {
  func.func @main(%cut1_0: tensor<3x5x1xf32>) -> tensor<3x5x1xf32> {
    %0 = graph.erf %cut1_0 : (tensor<3x5x1xf32>) -> tensor<3x5x1xf32>
    func.return %0 : tensor<3x5x1xf32>
  }
}
