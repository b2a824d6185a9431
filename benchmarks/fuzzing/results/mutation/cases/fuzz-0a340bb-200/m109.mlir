// tensorium fuzz: crash at cpu build (tensorium/lowering/kernel.py:broadcast_indices)
// IndexError: list index out of range
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-sl8zp3js/out/failures/001-crash-cpu-build.mlir
// pipeline: 
// seed: 1730027808
// backends: interp,cpu,cuda
// opt-level: 1
module {
  func.func @main(%cut8_0: tensor<4x4xf32>, %cut7_0: tensor<4x5xf32>, %cut6_0: tensor<1x5x5xf32>) -> tensor<1x5x4xf32> {
    %0 = graph.attention %cut6_0, %cut7_0, %cut8_0 {scale = 0.4472135954999579, causal = true} : (tensor<1x5x5xf32>, tensor<4x5xf32>, tensor<4x4xf32>) -> tensor<1x5x4xf32>
    func.return %0 : tensor<1x5x4xf32>
  }
}
