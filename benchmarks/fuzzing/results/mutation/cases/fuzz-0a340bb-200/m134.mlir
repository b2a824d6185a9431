// tensorium fuzz: mismatch at cpu
// output 4 (tensor<1x4x5x1xf32>): 8 of 20 elements differ; at [0, 0, 3, 0] got 0.595146894454956, expected 1.216745138168335
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-jqeky30c/out/failures/001-mismatch-cpu.mlir
// pipeline: layout
// seed: 1099979629
// backends: interp,cpu
// opt-level: 1
// schedule-seed: 495680686
module {
  func.func @main(%cut6_0: tensor<4x3x2x1xf32>, %cut5_0: tensor<1x3x9x1xf32>) -> tensor<1x4x5x1xf32> {
    %0 = graph.conv2d %cut5_0, %cut6_0 {strides = [2, 1], padding = [1, 0, 1, 0]} : (tensor<1x3x9x1xf32>, tensor<4x3x2x1xf32>) -> tensor<1x4x5x1xf32>
    func.return %0 : tensor<1x4x5x1xf32>
  }
}
