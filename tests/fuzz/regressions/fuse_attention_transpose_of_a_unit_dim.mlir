// bug: fuse-attention took transpose(k, [0, 2, 1]) followed by a unit reshape for k^T, although the
// transpose only moved a size-1 dim, and rewrote k as a reshape (a reinterpretation, not a transpose);
// it now requires the transpose to swap the matmul operand's own last two dims.
// pipeline: fuse-attention
// seed: 0
// backends: interp,cpu
module {
  func.func @main(%q: tensor<4x6xf32>, %k: tensor<6x1x8xf32>, %v: tensor<8x3xf32>) -> tensor<4x3xf32> {
    %0 = graph.transpose %k {perm = [0, 2, 1]} : (tensor<6x1x8xf32>) -> tensor<6x8x1xf32>
    %1 = graph.reshape %0 {shape = [6, 8]} : (tensor<6x8x1xf32>) -> tensor<6x8xf32>
    %2 = graph.matmul %q, %1 : (tensor<4x6xf32>, tensor<6x8xf32>) -> tensor<4x8xf32>
    %3 = graph.softmax %2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %4 = graph.matmul %3, %v : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    func.return %4 : tensor<4x3xf32>
  }
}
