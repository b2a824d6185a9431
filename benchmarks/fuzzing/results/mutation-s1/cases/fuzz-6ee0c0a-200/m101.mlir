// tensorium fuzz: verifier at cuda build
// error: 'loop.load' op expected 3 indices for buffer<2x32x5xf32, global>, got 2
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-ux5iqegf/out/failures/001-verifier-cuda-build.mlir
// pipeline: 
// seed: 761772973
// backends: interp,cuda
// opt-level: 0
// schedule-seed: 1260134287
module {
  func.func @main(%cut3_0: tensor<1x5x1xf32>, %cut2_0: tensor<1x5x2xf32>, %cut1_0: tensor<2x32x2xf32>) -> tensor<2x32x1xf32> {
    %0 = graph.attention %cut1_0, %cut2_0, %cut3_0 {scale = 0.7071067811865475} : (tensor<2x32x2xf32>, tensor<1x5x2xf32>, tensor<1x5x1xf32>) -> tensor<2x32x1xf32>
    func.return %0 : tensor<2x32x1xf32>
  }
}
