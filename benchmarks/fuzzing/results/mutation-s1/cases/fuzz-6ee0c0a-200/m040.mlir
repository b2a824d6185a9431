// tensorium fuzz: crash at webgpu build (tensorium/lowering/space.py:_gpu_default)
// TypeError: unsupported operand type(s) for %: 'dict' and 'dict'
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-4d7q35fc/out/failures/001-crash-webgpu-build.mlir
// pipeline: 
// seed: 1788089691
// backends: interp,cpu,webgpu
// opt-level: 2
// schedule-seed: 1231901276
module {
  func.func @main(%cut3_0: tensor<3x30xf32>, %cut2_0: tensor<1x2x3x30xf32>) -> tensor<1x2x3x3xf32> {
    %0 = graph.matmul %cut2_0, %cut3_0 {transpose_b = true} : (tensor<1x2x3x30xf32>, tensor<3x30xf32>) -> tensor<1x2x3x3xf32>
    func.return %0 : tensor<1x2x3x3xf32>
  }
}
