// RUN: fuse-siblings
// Two matmuls of %x by transposed constant weights, each followed by a bias add, become one matmul of
// %x by the stacked weights (transposed here) plus one add of the stacked biases; each result is a
// contiguous slice of it (a view). The matmul with %x on the other side is no sibling.
module {
  func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>) {
    %wq = graph.constant {value = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
    %wk = graph.constant {value = dense<[[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0], [2.0, 2.0, 2.0, 2.0]]> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
    %bq = graph.constant {value = dense<[0.5, 1.5, 2.5]> : tensor<3xf32>} : () -> tensor<3xf32>
    %bk = graph.constant {value = dense<-1.0> : tensor<3xf32>} : () -> tensor<3xf32>
    %0 = graph.matmul %x, %wq {transpose_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %1 = graph.add %0, %bq : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %2 = graph.matmul %x, %wk {transpose_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<2x3xf32>
    %3 = graph.add %2, %bk : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %4 = graph.matmul %wk, %x {transpose_b = true} : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
    func.return %1, %3, %4 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>) {
    %wk = graph.constant {value = dense<[[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0], [2.0, 2.0, 2.0, 2.0]]> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
    %0 = graph.constant {value = dense<[[[1.0, 5.0, 9.0], [2.0, 6.0, 10.0], [3.0, 7.0, 11.0], [4.0, 8.0, 12.0]], [[0.0, 1.0, 2.0], [1.0, 0.0, 2.0], [0.0, 1.0, 2.0], [1.0, 0.0, 2.0]]]> : tensor<2x4x3xf32>} : () -> tensor<2x4x3xf32>
    %1 = graph.matmul %x, %0 : (tensor<2x4xf32>, tensor<2x4x3xf32>) -> tensor<2x2x3xf32>
    %2 = graph.constant {value = dense<[[[0.5, 1.5, 2.5]], [[-1.0, -1.0, -1.0]]]> : tensor<2x1x3xf32>} : () -> tensor<2x1x3xf32>
    %3 = graph.add %1, %2 : (tensor<2x2x3xf32>, tensor<2x1x3xf32>) -> tensor<2x2x3xf32>
    %4 = graph.slice %3 {starts = [0], ends = [1], axes = [0]} : (tensor<2x2x3xf32>) -> tensor<1x2x3xf32>
    %5 = graph.reshape %4 {shape = [2, 3]} : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
    %6 = graph.slice %3 {starts = [1], ends = [2], axes = [0]} : (tensor<2x2x3xf32>) -> tensor<1x2x3xf32>
    %7 = graph.reshape %6 {shape = [2, 3]} : (tensor<1x2x3xf32>) -> tensor<2x3xf32>
    %8 = graph.matmul %wk, %x {transpose_b = true} : (tensor<3x4xf32>, tensor<2x4xf32>) -> tensor<3x2xf32>
    func.return %5, %7, %8 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>
  }
}

// -----
// RUN: fuse-siblings
// With symbolic batch and sequence dims a slice of a stacked [2, batch, seq, 3] result would start at a
// symbolic offset (no view), so the weights are concatenated along their columns (transposed here), the
// biases too, and one split on the last axis gives the parts, with the same symbolic dims. %y has the type
// of %x but is another value: its matmul is no sibling.
module {
  func.func @main(%x: tensor<[batch]x[seq]x4xf32>, %y: tensor<[batch]x[seq]x4xf32>) -> (tensor<[batch]x[seq]x3xf32>, tensor<[batch]x[seq]x3xf32>, tensor<[batch]x[seq]x3xf32>) {
    %wq = graph.constant {value = dense<[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
    %wk = graph.constant {value = dense<[[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0], [2.0, 2.0, 2.0, 2.0]]> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
    %wv = graph.constant {value = dense<-1.0> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
    %bq = graph.constant {value = dense<[0.5, 1.5, 2.5]> : tensor<3xf32>} : () -> tensor<3xf32>
    %bk = graph.constant {value = dense<-1.0> : tensor<3xf32>} : () -> tensor<3xf32>
    %0 = graph.matmul %x, %wq {transpose_b = true} : (tensor<[batch]x[seq]x4xf32>, tensor<3x4xf32>) -> tensor<[batch]x[seq]x3xf32>
    %1 = graph.add %0, %bq : (tensor<[batch]x[seq]x3xf32>, tensor<3xf32>) -> tensor<[batch]x[seq]x3xf32>
    %2 = graph.matmul %x, %wk {transpose_b = true} : (tensor<[batch]x[seq]x4xf32>, tensor<3x4xf32>) -> tensor<[batch]x[seq]x3xf32>
    %3 = graph.add %2, %bk : (tensor<[batch]x[seq]x3xf32>, tensor<3xf32>) -> tensor<[batch]x[seq]x3xf32>
    %4 = graph.matmul %y, %wv {transpose_b = true} : (tensor<[batch]x[seq]x4xf32>, tensor<3x4xf32>) -> tensor<[batch]x[seq]x3xf32>
    func.return %1, %3, %4 : tensor<[batch]x[seq]x3xf32>, tensor<[batch]x[seq]x3xf32>, tensor<[batch]x[seq]x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<[batch]x[seq]x4xf32>, %y: tensor<[batch]x[seq]x4xf32>) -> (tensor<[batch]x[seq]x3xf32>, tensor<[batch]x[seq]x3xf32>, tensor<[batch]x[seq]x3xf32>) {
    %wv = graph.constant {value = dense<-1.0> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
    %0 = graph.constant {value = dense<[[1.0, 5.0, 9.0, 0.0, 1.0, 2.0], [2.0, 6.0, 10.0, 1.0, 0.0, 2.0], [3.0, 7.0, 11.0, 0.0, 1.0, 2.0], [4.0, 8.0, 12.0, 1.0, 0.0, 2.0]]> : tensor<4x6xf32>} : () -> tensor<4x6xf32>
    %1 = graph.matmul %x, %0 : (tensor<[batch]x[seq]x4xf32>, tensor<4x6xf32>) -> tensor<[batch]x[seq]x6xf32>
    %2 = graph.constant {value = dense<[0.5, 1.5, 2.5, -1.0, -1.0, -1.0]> : tensor<6xf32>} : () -> tensor<6xf32>
    %3 = graph.add %1, %2 : (tensor<[batch]x[seq]x6xf32>, tensor<6xf32>) -> tensor<[batch]x[seq]x6xf32>
    %4:2 = graph.split %3 {axis = 2, sizes = [3, 3]} : (tensor<[batch]x[seq]x6xf32>) -> (tensor<[batch]x[seq]x3xf32>, tensor<[batch]x[seq]x3xf32>)
    %5 = graph.matmul %y, %wv {transpose_b = true} : (tensor<[batch]x[seq]x4xf32>, tensor<3x4xf32>) -> tensor<[batch]x[seq]x3xf32>
    func.return %4#0, %4#1, %5 : tensor<[batch]x[seq]x3xf32>, tensor<[batch]x[seq]x3xf32>, tensor<[batch]x[seq]x3xf32>
  }
}
