// RUN: fold-batch-norm,dce
// A constant batch norm after a convolution folds into its weight and bias: k = scale / sqrt(var + eps)
// = [1, 0.25], W' = W * k per output channel, b' = (0 - mean) * k + beta. With a variance that is not a
// constant nothing folds.
module {
  func.func @main(%x: tensor<1x2x4x4xf32>, %v: tensor<2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
    %w = graph.constant {value = dense<[[[[2.0]], [[1.0]]], [[[0.5]], [[-1.0]]]]> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
    %scale = graph.constant {value = dense<[2.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %beta = graph.constant {value = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %mean = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %var = graph.constant {value = dense<[3.0, 15.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %0 = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %1 = graph.batch_norm %0, %scale, %beta, %mean, %var {eps = 1.0} : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    %2 = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %3 = graph.batch_norm %2, %scale, %beta, %mean, %v : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    func.return %1, %3 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<1x2x4x4xf32>, %v: tensor<2xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
    %w = graph.constant {value = dense<[[[[2.0]], [[1.0]]], [[[0.5]], [[-1.0]]]]> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
    %scale = graph.constant {value = dense<[2.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %beta = graph.constant {value = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %mean = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %0 = graph.constant {value = dense<[[[[2.0]], [[1.0]]], [[[0.125]], [[-0.25]]]]> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
    %1 = graph.constant {value = dense<[-0.5, -1.5]> : tensor<2xf32>} : () -> tensor<2xf32>
    %2 = graph.conv2d %x, %0, %1 : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    %3 = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %4 = graph.batch_norm %3, %scale, %beta, %mean, %v : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    func.return %2, %4 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
  }
}
// -----
// RUN: fold-batch-norm
// Must not change: the convolution's result is used twice, and the batch norm's axis is not the channel.
module {
  func.func @main(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
    %w = graph.constant {value = dense<1.0> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
    %p = graph.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %q = graph.constant {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
    %0 = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %1 = graph.batch_norm %0, %p, %p, %p, %p : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    %2 = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %3 = graph.batch_norm %2, %q, %q, %q, %q {axis = 3} : (tensor<1x2x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x2x4x4xf32>
    func.return %0, %1, %3 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
    %w = graph.constant {value = dense<1.0> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
    %p = graph.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %q = graph.constant {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
    %0 = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %1 = graph.batch_norm %0, %p, %p, %p, %p : (tensor<1x2x4x4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x4x4xf32>
    %2 = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32>
    %3 = graph.batch_norm %2, %q, %q, %q, %q {axis = 3} : (tensor<1x2x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x2x4x4xf32>
    func.return %0, %1, %3 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
  }
}
