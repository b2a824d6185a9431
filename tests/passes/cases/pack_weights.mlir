// RUN: pack-weights{width=4}
// A constant matmul weight becomes panels of 4 columns (one panel here, zero past the 3 columns): the
// order the CPU's GEMM reads, so that no packing happens at run time.
module {
  func.func @main(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
    %w = graph.constant {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %0 = graph.matmul %x, %w : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
    func.return %0 : tensor<4x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<4x2xf32>) -> tensor<4x3xf32> {
    %0 = graph.constant {value = dense<[[[1.0, 2.0, 3.0, 0.0], [4.0, 5.0, 6.0, 0.0]]]> : tensor<1x2x4xf32>} : () -> tensor<1x2x4xf32>
    %1 = graph.matmul_packed %x, %0 {cols = 3} : (tensor<4x2xf32>, tensor<1x2x4xf32>) -> tensor<4x3xf32>
    func.return %1 : tensor<4x3xf32>
  }
}
