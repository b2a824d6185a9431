// bug: fuse-attention took a softmax over a size-1 axis that a reshape had put last for the softmax over
// the keys (all ones instead of a distribution); it now requires the softmax's last dim to be the keys'.
// Found by the mutation-study author reading the pass; reduced by hand.
// pipeline: canonicalize,fold,cse,fuse-attention
// seed: 0
// backends: interp,cpu
module {
  func.func @main(%q: tensor<4x8xf32>, %k: tensor<6x8xf32>, %v: tensor<6x3xf32>) -> tensor<4x3xf32> {
    %0 = graph.matmul %q, %k {transpose_b = true} : (tensor<4x8xf32>, tensor<6x8xf32>) -> tensor<4x6xf32>
    %1 = graph.reshape %0 {shape = [4, 6, 1]} : (tensor<4x6xf32>) -> tensor<4x6x1xf32>
    %2 = graph.softmax %1 : (tensor<4x6x1xf32>) -> tensor<4x6x1xf32>
    %3 = graph.reshape %2 {shape = [4, 6]} : (tensor<4x6x1xf32>) -> tensor<4x6xf32>
    %4 = graph.matmul %3, %v : (tensor<4x6xf32>, tensor<6x3xf32>) -> tensor<4x3xf32>
    func.return %4 : tensor<4x3xf32>
  }
}
