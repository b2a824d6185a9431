// tensorium fuzz: mismatch at webgpu loop interpreter
// output 0 (tensor<4x1x5x4xf32>): 80 of 80 elements differ; at [0, 0, 0, 0] got nan, expected -1.0957965850830078
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-g1liidwv/out/failures/001-mismatch-webgpu-loop-interpreter.mlir
// pipeline: 
// seed: 445084102
// backends: interp,webgpu
// opt-level: 0
// schedule-seed: 318188496
// expect: fold-batch-norm
module {
  func.func @main(%x: tensor<4x1x5x4xf32>, %cut0_0: tensor<1x1x3x3xf32>) -> tensor<4x1x5x4xf32> {
    %0 = graph.conv2d %x, %cut0_0 {padding = [1, 1, 1, 1]} : (tensor<4x1x5x4xf32>, tensor<1x1x3x3xf32>) -> tensor<4x1x5x4xf32>
    func.return %0 : tensor<4x1x5x4xf32>
  }
}
