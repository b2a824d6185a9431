// pipeline: fuse,layout
// backends: interp,cpu
// bug: layout rewrote a convolution inside a fused group (conv2d + relu, fused first) to NHWC, putting a reshape and two transposes into the group, which the CPU lowering refuses (a fused group holds at most one op that is not elementwise) where the original compiled; layout now leaves ops inside graph.fused groups alone (tensorium/passes/layout.py, _outside_fused). Found by a 40-minute campaign (stop 36), seed 36
module {
  func.func @main(%cut5_0: tensor<3xf32>, %cut4_0: tensor<3x1x2x1xf32>, %cut3_0: tensor<1x1x2x1xf32>) -> tensor<1x3x2x1xf32> {
    %0 = graph.conv2d %cut3_0, %cut4_0, %cut5_0 {padding = [1, 0, 0, 0]} : (tensor<1x1x2x1xf32>, tensor<3x1x2x1xf32>, tensor<3xf32>) -> tensor<1x3x2x1xf32>
    %1 = graph.relu %0 : (tensor<1x3x2x1xf32>) -> tensor<1x3x2x1xf32>
    func.return %1 : tensor<1x3x2x1xf32>
  }
}
