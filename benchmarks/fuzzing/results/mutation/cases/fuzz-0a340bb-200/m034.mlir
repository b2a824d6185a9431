// tensorium fuzz: verifier at pass 'layout'
// error: 'graph.conv2d' op weight has 1 input channels per group, expected 8 (8 / groups 1)
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-lqcx9v3e/out/failures/001-verifier-pass-layout.mlir
// pipeline: layout
// seed: 2028812322
// backends: interp,cpu
// opt-level: 1
module {
  func.func @main(%cut4_0: tensor<2x1x3x1xf32>, %cut3_0: tensor<2x8x1x1xf32>) -> tensor<2x4x2x2xf32> {
    %0 = graph.conv2d %cut3_0, %cut4_0 {strides = [2, 1], padding = [2, 1, 0, 0], layout = "NHWC"} : (tensor<2x8x1x1xf32>, tensor<2x1x3x1xf32>) -> tensor<2x4x2x2xf32>
    func.return %0 : tensor<2x4x2x2xf32>
  }
}
