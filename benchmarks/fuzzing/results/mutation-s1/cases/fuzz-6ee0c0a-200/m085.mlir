// tensorium fuzz: crash at pass 'lower-to-loops' (tensorium/lowering/conv.py:emit_nhwc_conv2d)
// IndexError: tuple index out of range
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-wu_jowb5/out/failures/001-crash-pass-lower-to-loops.mlir
// pipeline: lower-to-loops
// seed: 903829492
// backends: interp,cpu
// opt-level: 1
// specials: yes
// schedule-seed: 2038637518
module {
  func.func @main(%cut7_0: tensor<3x1x3x4xf32>, %cut6_0: tensor<1x1x1x3xf32>) -> tensor<1x3x1x4xf32> {
    %0 = graph.conv2d %cut6_0, %cut7_0 {strides = [1, 2], padding = [2, 0, 2, 0], layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x1x1x3xf32>, tensor<3x1x3x4xf32>) -> tensor<1x3x1x4xf32>
    func.return %0 : tensor<1x3x1x4xf32>
  }
}
