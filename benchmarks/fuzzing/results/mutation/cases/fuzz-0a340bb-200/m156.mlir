// tensorium fuzz: crash at cuda build (tensorium/lowering/kernel.py:broadcast_indices)
// IndexError: tuple index out of range
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-ixtxodoo/out/failures/001-crash-cuda-build.mlir
// pipeline: 
// seed: 761772973
// backends: interp,cuda
// opt-level: 1
// schedule-seed: 1260134287
module {
  func.func @main(%cut3_0: tensor<1x5x1xf32>, %cut2_0: tensor<1x5x2xf32>, %cut1_0: tensor<2x32x2xf32>) -> tensor<2x32x1xf32> {
    %0 = graph.attention %cut1_0, %cut2_0, %cut3_0 {scale = 0.7071067811865475} : (tensor<2x32x2xf32>, tensor<1x5x2xf32>, tensor<1x5x1xf32>) -> tensor<2x32x1xf32>
    func.return %0 : tensor<2x32x1xf32>
  }
}
