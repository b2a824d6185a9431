// tensorium fuzz: mismatch at cpu
// output 3 (tensor<1x2x3x1xf32>): 6 of 6 elements differ; at [0, 0, 0, 0] got -2.6790611743927, expected -0.8744024634361267
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-4mc8wlaf/out/failures/001-mismatch-cpu.mlir
// pipeline: 
// seed: 510212157
// backends: interp,cpu,webgpu
// opt-level: 0
// schedule-seed: 1731040023
module {
  func.func @main(%cut6_0: tensor<4x2x3x3xf32>, %cut5_0: tensor<1x4x1x1xf32>) -> tensor<1x2x3x1xf32> {
    %0 = graph.conv_transpose2d %cut5_0, %cut6_0 {padding = [0, 2, 0, 0]} : (tensor<1x4x1x1xf32>, tensor<4x2x3x3xf32>) -> tensor<1x2x3x1xf32>
    func.return %0 : tensor<1x2x3x1xf32>
  }
}
