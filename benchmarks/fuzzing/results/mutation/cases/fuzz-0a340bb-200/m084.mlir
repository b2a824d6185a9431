// tensorium fuzz: mismatch at cpu
// output 3 (tensor<1x4x2x2xf32>): 16 of 16 elements differ; at [0, 0, 0, 0] got -0.23105564713478088, expected -0.0013420801842585206
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-yfipasi7/out/failures/001-mismatch-cpu.mlir
// pipeline: 
// seed: 431722295
// backends: interp,cpu
// opt-level: 1
module {
  func.func @main(%cut1_0: tensor<4x3x1x3xf32>, %cut0_0: tensor<1x3x1x1xf32>) -> tensor<1x4x2x2xf32> {
    %0 = graph.conv2d %cut0_0, %cut1_0 {padding = [0, 1, 1, 2], dilations = [2, 1]} : (tensor<1x3x1x1xf32>, tensor<4x3x1x3xf32>) -> tensor<1x4x2x2xf32>
    func.return %0 : tensor<1x4x2x2xf32>
  }
}
