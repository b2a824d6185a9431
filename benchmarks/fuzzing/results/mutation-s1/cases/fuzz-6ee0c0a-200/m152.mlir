// tensorium fuzz: mismatch at cpu
// output 1 (tensor<3xf32>): 3 of 3 elements differ; at [0] got -0.031136907637119293, expected -0.04940631613135338
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-ozz45lc9/out/failures/001-mismatch-cpu.mlir
// pipeline: 
// seed: 1911958745
// backends: interp,cpu,webgpu
// opt-level: 0
module {
  func.func @main(%cut0_0: tensor<3x29xf32>) -> tensor<3xf32> {
    %0 = graph.reduce_mean %cut0_0 {axes = [1]} : (tensor<3x29xf32>) -> tensor<3xf32>
    func.return %0 : tensor<3xf32>
  }
}
