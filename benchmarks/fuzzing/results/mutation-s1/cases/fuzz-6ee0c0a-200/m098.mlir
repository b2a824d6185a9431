// tensorium fuzz: mismatch at cpu
// output 3 (tensor<3xf16>): 3 of 3 elements differ; at [0] got 1.0, expected 0.65576171875
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-b52mfiyo/out/failures/001-mismatch-cpu.mlir
// pipeline: 
// seed: 1776774049
// backends: interp,cpu
// opt-level: 2
module {
  func.func @main(%x1: tensor<3xf16>) -> tensor<3xf16> {
    %0 = graph.abs %x1 : (tensor<3xf16>) -> tensor<3xf16>
    %1 = graph.log %0 : (tensor<3xf16>) -> tensor<3xf16>
    func.return %1 : tensor<3xf16>
  }
}
