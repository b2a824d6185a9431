// RUN: quantize{bits=1,group=0,min-elements=0},pack-quant-gpu
// 1-bit codes packed for a warp: each row's 32 codes are one word (row 0 alternates: 0xAAAAAAAA; row 1 is 16
// ones then zeros: 0xFFFF), the words of 32 rows side by side (rows past the 2 zero); scales and zero points
// panel-major, [panels, groups, 32].
module {
  func.func @main(%x: tensor<1x32xf32>) -> tensor<1x2xf32> {
    %w = graph.constant {value = dense<[[0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0], [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0, -2.0]]> : tensor<2x32xf32>} : () -> tensor<2x32xf32>
    %0 = graph.matmul %x, %w {transpose_b = true} : (tensor<1x32xf32>, tensor<2x32xf32>) -> tensor<1x2xf32>
    func.return %0 : tensor<1x2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<1x32xf32>) -> tensor<1x2xf32> {
    %0 = graph.constant {value = dense<[[[[2863311530, 65535, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]]]]> : tensor<1x1x1x32xu32>} : () -> tensor<1x1x1x32xu32>
    %1 = graph.constant {value = dense<[[[1.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<1x1x32xf32>} : () -> tensor<1x1x32xf32>
    %2 = graph.constant {value = dense<[[[0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<1x1x32xf32>} : () -> tensor<1x1x32xf32>
    %3 = quant.matmul_packed %x, %0, %1, %2 {bits = 1, cols = 2, group = 32, lanes = 32} : (tensor<1x32xf32>, tensor<1x1x1x32xu32>, tensor<1x1x32xf32>, tensor<1x1x32xf32>) -> tensor<1x2xf32>
    func.return %3 : tensor<1x2xf32>
  }
}
