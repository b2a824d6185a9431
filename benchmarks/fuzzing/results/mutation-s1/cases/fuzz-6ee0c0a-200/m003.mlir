// tensorium fuzz: verifier at pass 'layout'
// error: 'graph.conv2d' op weight has 2 input channels per group, expected 15 (15 / groups 1)
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-s5vdra2n/out/failures/001-verifier-pass-layout.mlir
// pipeline: layout
// seed: 675994948
// backends: interp
// specials: yes
// schedule-seed: 303831493
module {
  func.func @main(%cut6_0: tensor<5xf32>, %cut5_0: tensor<5x2x2x15xf32>, %cut4_0: tensor<1x15x1x2xf32>) -> tensor<1x5x1x1xf32> {
    %0 = graph.conv2d %cut4_0, %cut5_0, %cut6_0 {strides = [2, 2], padding = [1, 0, 0, 0], kernel_layout = "OHWI"} : (tensor<1x15x1x2xf32>, tensor<5x2x2x15xf32>, tensor<5xf32>) -> tensor<1x5x1x1xf32>
    func.return %0 : tensor<1x5x1x1xf32>
  }
}
