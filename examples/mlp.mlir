// A two-layer MLP: relu(x @ w1 + b1) @ w2 + b2, with weights as function arguments.
module {
  func.func @main(%x: tensor<4x16xf32>, %w1: tensor<16x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x8xf32>, %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    %0 = graph.matmul %x, %w1 : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
    %1 = graph.add %0, %b1 : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
    %2 = graph.relu %1 : (tensor<4x32xf32>) -> tensor<4x32xf32>
    %3 = graph.matmul %2, %w2 : (tensor<4x32xf32>, tensor<32x8xf32>) -> tensor<4x8xf32>
    %4 = graph.add %3, %b2 : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    func.return %4 : tensor<4x8xf32>
  }
}
