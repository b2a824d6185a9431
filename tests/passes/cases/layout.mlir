// RUN: layout
// A convolution net moves to NHWC: the input is transposed once, the constant weight is transposed to
// HWIO here (at compile time), the bias add and the scale follow the layout (the [3, 1, 1] bias becomes a
// [1, 1, 1, 3] constant, the scalar stays), the pooling runs in NHWC, and one transpose restores NCHW.
module {
  func.func @main(%x: tensor<1x2x4x4xf32>, %s: tensor<f32>) -> tensor<1x3x2x2xf32> {
    %w = graph.constant {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]]]> : tensor<3x2x1x1xf32>} : () -> tensor<3x2x1x1xf32>
    %b = graph.constant {value = dense<[[[1.0]], [[2.0]], [[3.0]]]> : tensor<3x1x1xf32>} : () -> tensor<3x1x1xf32>
    %0 = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
    %1 = graph.add %0, %b : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
    %2 = graph.mul %1, %s : (tensor<1x3x4x4xf32>, tensor<f32>) -> tensor<1x3x4x4xf32>
    %3 = graph.max_pool2d %2 {kernel = [2, 2], strides = [2, 2]} : (tensor<1x3x4x4xf32>) -> tensor<1x3x2x2xf32>
    func.return %3 : tensor<1x3x2x2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<1x2x4x4xf32>, %s: tensor<f32>) -> tensor<1x3x2x2xf32> {
    %0 = graph.transpose %x {perm = [0, 2, 3, 1]} : (tensor<1x2x4x4xf32>) -> tensor<1x4x4x2xf32>
    %1 = graph.constant {value = dense<[[[[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]]]> : tensor<1x1x2x3xf32>} : () -> tensor<1x1x2x3xf32>
    %2 = graph.conv2d %0, %1 {layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x4x4x2xf32>, tensor<1x1x2x3xf32>) -> tensor<1x4x4x3xf32>
    %3 = graph.constant {value = dense<[[[[1.0, 2.0, 3.0]]]]> : tensor<1x1x1x3xf32>} : () -> tensor<1x1x1x3xf32>
    %4 = graph.add %2, %3 : (tensor<1x4x4x3xf32>, tensor<1x1x1x3xf32>) -> tensor<1x4x4x3xf32>
    %5 = graph.mul %4, %s : (tensor<1x4x4x3xf32>, tensor<f32>) -> tensor<1x4x4x3xf32>
    %6 = graph.max_pool2d %5 {kernel = [2, 2], strides = [2, 2], layout = "NHWC"} : (tensor<1x4x4x3xf32>) -> tensor<1x2x2x3xf32>
    %7 = graph.transpose %6 {perm = [0, 3, 1, 2]} : (tensor<1x2x2x3xf32>) -> tensor<1x3x2x2xf32>
    func.return %7 : tensor<1x3x2x2xf32>
  }
}
// -----
// RUN: layout,dce
// A weight that is not a constant is transposed at run time; an add whose other operand is already
// available in NHWC (%x) runs in NHWC, one that would need a new transpose (%y) stays in NCHW; a grouped
// convolution stays in NCHW (the NHWC kernel handles one group).
module {
  func.func @main(%x: tensor<1x2x3x3xf32>, %w: tensor<2x2x3x3xf32>, %y: tensor<1x2x3x3xf32>, %g: tensor<2x1x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
    %0 = graph.conv2d %x, %w {padding = [1, 1, 1, 1]} : (tensor<1x2x3x3xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %1 = graph.add %0, %x : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %2 = graph.add %0, %y : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %3 = graph.conv2d %x, %g {groups = 2, padding = [1, 1, 1, 1]} : (tensor<1x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32>
    func.return %1, %2, %3 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<1x2x3x3xf32>, %w: tensor<2x2x3x3xf32>, %y: tensor<1x2x3x3xf32>, %g: tensor<2x1x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
    %0 = graph.transpose %x {perm = [0, 2, 3, 1]} : (tensor<1x2x3x3xf32>) -> tensor<1x3x3x2xf32>
    %1 = graph.transpose %w {perm = [2, 3, 1, 0]} : (tensor<2x2x3x3xf32>) -> tensor<3x3x2x2xf32>
    %2 = graph.conv2d %0, %1 {padding = [1, 1, 1, 1], layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x3x3x2xf32>, tensor<3x3x2x2xf32>) -> tensor<1x3x3x2xf32>
    %3 = graph.transpose %2 {perm = [0, 3, 1, 2]} : (tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
    %4 = graph.add %2, %0 : (tensor<1x3x3x2xf32>, tensor<1x3x3x2xf32>) -> tensor<1x3x3x2xf32>
    %5 = graph.transpose %4 {perm = [0, 3, 1, 2]} : (tensor<1x3x3x2xf32>) -> tensor<1x2x3x3xf32>
    %6 = graph.add %3, %y : (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    %7 = graph.conv2d %x, %g {groups = 2, padding = [1, 1, 1, 1]} : (tensor<1x2x3x3xf32>, tensor<2x1x3x3xf32>) -> tensor<1x2x3x3xf32>
    func.return %5, %6, %7 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
  }
}
// -----
// RUN: layout{format=nchwc}
module {
  func.func @main(%x: tensor<1x2x4x4xf32>, %s: tensor<f32>) -> tensor<1x3x2x2xf32> {
    %w = graph.constant {value = dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]], [[[5.0]], [[6.0]]]]> : tensor<3x2x1x1xf32>} : () -> tensor<3x2x1x1xf32>
    %b = graph.constant {value = dense<[[[1.0]], [[2.0]], [[3.0]]]> : tensor<3x1x1xf32>} : () -> tensor<3x1x1xf32>
    %0 = graph.conv2d %x, %w : (tensor<1x2x4x4xf32>, tensor<3x2x1x1xf32>) -> tensor<1x3x4x4xf32>
    %1 = graph.add %0, %b : (tensor<1x3x4x4xf32>, tensor<3x1x1xf32>) -> tensor<1x3x4x4xf32>
    %2 = graph.mul %1, %s : (tensor<1x3x4x4xf32>, tensor<f32>) -> tensor<1x3x4x4xf32>
    %3 = graph.max_pool2d %2 {kernel = [2, 2], strides = [2, 2]} : (tensor<1x3x4x4xf32>) -> tensor<1x3x2x2xf32>
    func.return %3 : tensor<1x3x2x2xf32>
  }
}
// ERROR: format must be 'nhwc' (the only layout implemented), got 'nchwc'
