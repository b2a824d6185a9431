// tensorium fuzz: verifier at pass 'layout'
// error: 'graph.conv2d' op weight has 2 input channels per group, expected 1 (1 / groups 1)
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-vclw1ll3/out/failures/001-verifier-pass-layout.mlir
// pipeline: layout
// seed: 1326103758
// backends: interp
module {
  func.func @main(%cut1_0: tensor<1x2x1x1xf32>, %cut0_0: tensor<1x1x2x4xf32>) -> tensor<1x1x1x3xf32> {
    %0 = graph.conv2d %cut0_0, %cut1_0 {strides = [2, 1], padding = [0, 0, 0, 1], dilations = [2, 2], kernel_layout = "HWIO"} : (tensor<1x1x2x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x1x3xf32>
    func.return %0 : tensor<1x1x1x3xf32>
  }
}
