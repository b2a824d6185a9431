// RUN: quantize{bits=2,group=0,min-elements=0}
// Round to nearest, one scale per output channel: row 0 spans [0, 3] (scale 1, zero 0); row 1 spans
// [-1, 1] (scale 2/3, zero point 1.5), so 0 -> 1.5 rounds to even 2 and 0.5 -> 2.25 to 2.
module {
  func.func @main(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
    %w = graph.constant {value = dense<[[0.0, 1.0, 2.0, 3.0], [-1.0, 1.0, 0.0, 0.5]]> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
    %0 = graph.matmul %x, %w {transpose_b = true} : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
    func.return %0 : tensor<3x2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
    %0 = graph.constant {value = dense<[[0, 1, 2, 3], [0, 3, 2, 2]]> : tensor<2x4x!quant<u2:f32, per_channel(axis=0)>>} : () -> tensor<2x4x!quant<u2:f32, per_channel(axis=0)>>
    %1 = graph.constant {value = dense<[[1.0], [0.6666666865348816]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
    %2 = graph.constant {value = dense<[[0.0], [1.5]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
    %3 = quant.matmul %x, %0, %1, %2 : (tensor<3x4xf32>, tensor<2x4x!quant<u2:f32, per_channel(axis=0)>>, tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<3x2xf32>
    func.return %3 : tensor<3x2xf32>
  }
}
// -----
// RUN: quantize{bits=1,group=0,min-elements=0},pack-quant{target="cpu:x86-64-v3"}
// 1-bit codes packed for AVX2's 8 lanes: each row's 32 codes are one word (row 0 alternates: 0xAAAAAAAA; row 1
// is 16 ones then zeros: 0xFFFF), the words of 8 rows side by side, rows past the 2 zero; scales and zero
// points panel-major, [panels, groups, 8].
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
    %0 = graph.constant {value = dense<[[[[2863311530, 65535, 0, 0, 0, 0, 0, 0]]]]> : tensor<1x1x1x8xu32>} : () -> tensor<1x1x1x8xu32>
    %1 = graph.constant {value = dense<[[[1.0, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<1x1x8xf32>} : () -> tensor<1x1x8xf32>
    %2 = graph.constant {value = dense<[[[0.0, 0.5, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]]> : tensor<1x1x8xf32>} : () -> tensor<1x1x8xf32>
    %3 = quant.matmul_packed %x, %0, %1, %2 {bits = 1, cols = 2, group = 32, lanes = 8} : (tensor<1x32xf32>, tensor<1x1x1x8xu32>, tensor<1x1x8xf32>, tensor<1x1x8xf32>) -> tensor<1x2xf32>
    func.return %3 : tensor<1x2xf32>
  }
}
// -----
// RUN: quantize{group=3,min-elements=0}
// A group must divide the contraction.
module {
  func.func @main(%x: tensor<1x4xf32>) -> tensor<1x2xf32> {
    %w = graph.constant {value = dense<1.0> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
    %0 = graph.matmul %x, %w {transpose_b = true} : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<1x2xf32>
    func.return %0 : tensor<1x2xf32>
  }
}
// ERROR: quantize: group=3 does not divide K=4 of the weight of graph.matmul -> tensor<1x2xf32> at <input>:5:10
