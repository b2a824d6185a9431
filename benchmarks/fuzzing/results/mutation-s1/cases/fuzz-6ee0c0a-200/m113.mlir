// the case running now
// pipeline: pack-quant,fuse-siblings,lower-to-loops
// seed: 1960127676
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%x0: tensor<2xf32>, %x1: tensor<3x19xf32>) -> (tensor<1x1x2x1xf32>, tensor<1x1x4x6xf32>, tensor<1x2xf32>, tensor<2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) {
    %0 = graph.broadcast_to %x0 {shape = [1, 2]} : (tensor<2xf32>) -> tensor<1x2xf32>
    %1 = graph.broadcast_to %x0 {shape = [1, 2]} : (tensor<2xf32>) -> tensor<1x2xf32>
    %2 = graph.reshape %0 {shape = [1, 1, 2, 1]} : (tensor<1x2xf32>) -> tensor<1x1x2x1xf32>
    %3 = graph.resize %2 {size = [4, 6], nearest_mode = "round_prefer_ceil"} : (tensor<1x1x2x1xf32>) -> tensor<1x1x4x6xf32>
    %4 = graph.mul %1, %0 : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
    %5 = graph.constant {value = dense<1.0> : tensor<1xf32>} : () -> tensor<1xf32>
    %6 = graph.eq %0, %5 : (tensor<1x2xf32>, tensor<1xf32>) -> tensor<1x2xi1>
    %7 = graph.where %6, %0, %5 : (tensor<1x2xi1>, tensor<1x2xf32>, tensor<1xf32>) -> tensor<1x2xf32>
    %8 = graph.abs %4 : (tensor<1x2xf32>) -> tensor<1x2xf32>
    %9 = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %10 = graph.add %8, %9 : (tensor<1x2xf32>, tensor<f32>) -> tensor<1x2xf32>
    %11 = graph.reciprocal %10 : (tensor<1x2xf32>) -> tensor<1x2xf32>
    %12 = graph.reshape %x0 {shape = [0]} : (tensor<2xf32>) -> tensor<2xf32>
    %13 = graph.cumsum %7 {axis = -1, exclusive = true} : (tensor<1x2xf32>) -> tensor<1x2xf32>
    %14 = graph.constant {value = dense<[[0.8368809819221497, -0.801475465297699]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
    %15 = graph.constant {value = dense<0> : tensor<1x1xi64>} : () -> tensor<1x1xi64>
    %16 = graph.scatter_nd %4, %15, %14 {reduction = "max"} : (tensor<1x2xf32>, tensor<1x1xi64>, tensor<1x2xf32>) -> tensor<1x2xf32>
    %17 = graph.tanh %8 : (tensor<1x2xf32>) -> tensor<1x2xf32>
    %18 = graph.reduce_prod %17 {axes = [0]} : (tensor<1x2xf32>) -> tensor<2xf32>
    %19 = graph.attention %16, %16, %16 {scale = 0.633, causal = true} : (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
    %20 = graph.sigmoid %2 : (tensor<1x1x2x1xf32>) -> tensor<1x1x2x1xf32>
    func.return %20, %3, %11, %12, %13, %19 : tensor<1x1x2x1xf32>, tensor<1x1x4x6xf32>, tensor<1x2xf32>, tensor<2xf32>, tensor<1x2xf32>, tensor<1x2xf32>
  }
}
