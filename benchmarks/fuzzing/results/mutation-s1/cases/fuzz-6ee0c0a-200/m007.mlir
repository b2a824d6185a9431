// tensorium fuzz: crash at cpu build (tensorium/lowering/fused.py:_broadcast)
// IndexError: list index out of range
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-79ra0j7a/out/failures/001-crash-cpu-build.mlir
// pipeline: fuse
// seed: 1823037703
// backends: interp,cpu
// opt-level: 1
// schedule-seed: 1057538319
module {
  func.func @main(%x1: tensor<2x3x3x4xf32>, %cut2_0: tensor<3x3x3xf32>, %cut0_0: tensor<4x3xf32>) -> tensor<2x3x3x3xf32> {
    %0 = graph.matmul %x1, %cut0_0 : (tensor<2x3x3x4xf32>, tensor<4x3xf32>) -> tensor<2x3x3x3xf32>
    %1 = graph.sub %0, %cut2_0 : (tensor<2x3x3x3xf32>, tensor<3x3x3xf32>) -> tensor<2x3x3x3xf32>
    func.return %1 : tensor<2x3x3x3xf32>
  }
}
