// tensorium fuzz: mismatch at cpu
// output 1 (tensor<4xf32>): 2 of 4 elements differ; at [1] got 0.8373926877975464, expected 0.8409068584442139
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-5hhe4utr/out/failures/001-mismatch-cpu.mlir
// pipeline: lower-to-loops
// seed: 864592219
// backends: interp,cpu
// opt-level: 1
// schedule-seed: 1046650441
module {
  func.func @main(%x1: tensor<4xf32>) -> tensor<4xf32> {
    %0 = graph.erf %x1 : (tensor<4xf32>) -> tensor<4xf32>
    func.return %0 : tensor<4xf32>
  }
}
