// RUN: fuse-attention,dce
// torch's bmm decomposition: k transposed by an op, unit reshapes around both matmuls and the softmax.
// One graph.attention on q, v and k (reshaped: free views), the transpose gone.
module {
  func.func @main(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x3xf32>) -> tensor<2x4x3xf32> {
    %s = graph.constant {value = dense<0.25> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.transpose %k {perm = [0, 1, 3, 2]} : (tensor<1x2x6x8xf32>) -> tensor<1x2x8x6xf32>
    %1 = graph.reshape %q {shape = [2, 4, 8]} : (tensor<1x2x4x8xf32>) -> tensor<2x4x8xf32>
    %2 = graph.reshape %0 {shape = [2, 8, 6]} : (tensor<1x2x8x6xf32>) -> tensor<2x8x6xf32>
    %3 = graph.matmul %1, %2 : (tensor<2x4x8xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
    %4 = graph.reshape %3 {shape = [1, 2, 4, 6]} : (tensor<2x4x6xf32>) -> tensor<1x2x4x6xf32>
    %5 = graph.mul %4, %s : (tensor<1x2x4x6xf32>, tensor<f32>) -> tensor<1x2x4x6xf32>
    %6 = graph.softmax %5 : (tensor<1x2x4x6xf32>) -> tensor<1x2x4x6xf32>
    %7 = graph.reshape %6 {shape = [2, 4, 6]} : (tensor<1x2x4x6xf32>) -> tensor<2x4x6xf32>
    %8 = graph.reshape %v {shape = [2, 6, 3]} : (tensor<1x2x6x3xf32>) -> tensor<2x6x3xf32>
    %9 = graph.matmul %7, %8 : (tensor<2x4x6xf32>, tensor<2x6x3xf32>) -> tensor<2x4x3xf32>
    func.return %9 : tensor<2x4x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x6x8xf32>, %v: tensor<1x2x6x3xf32>) -> tensor<2x4x3xf32> {
    %0 = graph.reshape %q {shape = [2, 4, 8]} : (tensor<1x2x4x8xf32>) -> tensor<2x4x8xf32>
    %1 = graph.reshape %v {shape = [2, 6, 3]} : (tensor<1x2x6x3xf32>) -> tensor<2x6x3xf32>
    %2 = graph.reshape %k {shape = [2, 6, 8]} : (tensor<1x2x6x8xf32>) -> tensor<2x6x8xf32>
    %3 = graph.attention %0, %2, %1 {scale = 0.25} : (tensor<2x4x8xf32>, tensor<2x6x8xf32>, tensor<2x6x3xf32>) -> tensor<2x4x3xf32>
    func.return %3 : tensor<2x4x3xf32>
  }
}
// -----
// RUN: fuse-attention,dce
// A causal triangle (where with a constant tril and -inf) and a division by 2 (scale 0.5); a scalar times
// the scores plus a float mask; no scale at all (scale 1). Not fused: a softmax whose result is also
// returned (%14).
module {
  func.func @main(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %m: tensor<4x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
    %d = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %ninf = graph.constant {value = dense<-inf> : tensor<f32>} : () -> tensor<f32>
    %tril = graph.constant {value = dense<[[true, false, false, false], [true, true, false, false], [true, true, true, false], [true, true, true, true]]> : tensor<4x4xi1>} : () -> tensor<4x4xi1>
    %0 = graph.matmul %q, %k {transpose_b = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
    %1 = graph.div %0, %d : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
    %2 = graph.where %tril, %1, %ninf : (tensor<4x4xi1>, tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
    %3 = graph.softmax %2 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %4 = graph.matmul %3, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %5 = graph.matmul %q, %k {transpose_b = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
    %6 = graph.mul %d, %5 : (tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %7 = graph.add %6, %m : (tensor<2x4x4xf32>, tensor<4x4xf32>) -> tensor<2x4x4xf32>
    %8 = graph.softmax %7 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %9 = graph.matmul %8, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %10 = graph.matmul %q, %k {transpose_b = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
    %11 = graph.softmax %10 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %12 = graph.matmul %11, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %13 = graph.matmul %q, %k {transpose_b = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
    %14 = graph.softmax %13 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %15 = graph.matmul %14, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    func.return %4, %9, %12, %15, %14 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %v: tensor<2x4x8xf32>, %m: tensor<4x4xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
    %0 = graph.attention %q, %k, %v {scale = 0.5, causal = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %1 = graph.attention %q, %k, %v, %m {scale = 2.0} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<4x4xf32>) -> tensor<2x4x8xf32>
    %2 = graph.attention %q, %k, %v {scale = 1.0} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    %3 = graph.matmul %q, %k {transpose_b = true} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
    %4 = graph.softmax %3 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
    %5 = graph.matmul %4, %v : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
    func.return %0, %1, %2, %5, %4 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>
  }
}
// -----
// RUN: fuse-attention,dce
// HuggingFace's BERT with a padding mask, as torch.export gives it: where(mask, scores * scale, -inf) with a
// boolean mask of [batch, 1, seq, seq] (rank 4, broadcast over the heads), symbolic batch and sequence.
module {
  func.func @main(%q: tensor<[b]x2x[s]x8xf32>, %k: tensor<[b]x2x[s]x8xf32>, %v: tensor<[b]x2x[s]x8xf32>, %m: tensor<[b]x1x[s]x[s]xi1>) -> tensor<[b]x2x[s]x8xf32> {
    %c = graph.constant {value = dense<0.25> : tensor<f32>} : () -> tensor<f32>
    %ninf = graph.constant {value = dense<-inf> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.matmul %q, %k {transpose_b = true} : (tensor<[b]x2x[s]x8xf32>, tensor<[b]x2x[s]x8xf32>) -> tensor<[b]x2x[s]x[s]xf32>
    %1 = graph.mul %0, %c : (tensor<[b]x2x[s]x[s]xf32>, tensor<f32>) -> tensor<[b]x2x[s]x[s]xf32>
    %2 = graph.where %m, %1, %ninf : (tensor<[b]x1x[s]x[s]xi1>, tensor<[b]x2x[s]x[s]xf32>, tensor<f32>) -> tensor<[b]x2x[s]x[s]xf32>
    %3 = graph.softmax %2 : (tensor<[b]x2x[s]x[s]xf32>) -> tensor<[b]x2x[s]x[s]xf32>
    %4 = graph.matmul %3, %v : (tensor<[b]x2x[s]x[s]xf32>, tensor<[b]x2x[s]x8xf32>) -> tensor<[b]x2x[s]x8xf32>
    func.return %4 : tensor<[b]x2x[s]x8xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%q: tensor<[b]x2x[s]x8xf32>, %k: tensor<[b]x2x[s]x8xf32>, %v: tensor<[b]x2x[s]x8xf32>, %m: tensor<[b]x1x[s]x[s]xi1>) -> tensor<[b]x2x[s]x8xf32> {
    %0 = graph.attention %q, %k, %v, %m {scale = 0.25} : (tensor<[b]x2x[s]x8xf32>, tensor<[b]x2x[s]x8xf32>, tensor<[b]x2x[s]x8xf32>, tensor<[b]x1x[s]x[s]xi1>) -> tensor<[b]x2x[s]x8xf32>
    func.return %0 : tensor<[b]x2x[s]x8xf32>
  }
}
