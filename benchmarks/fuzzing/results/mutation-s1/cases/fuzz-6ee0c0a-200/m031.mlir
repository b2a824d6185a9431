// tensorium fuzz: verifier at webgpu build
// error: 'loop.const' op a constant of type index needs an integer value, got 65536.0
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-jxvske3g/out/failures/001-verifier-webgpu-build.mlir
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
