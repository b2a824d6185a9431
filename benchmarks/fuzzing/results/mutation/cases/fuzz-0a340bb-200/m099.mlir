// tensorium fuzz: crash at cpu build (tensorium/lowering/reduce.py:load)
// TypeError: unsupported operand type(s) for |: 'list' and 'list'
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-5jo_yqw6/out/failures/001-crash-cpu-build.mlir
// pipeline: 
// seed: 1788089691
// backends: interp,cpu
// opt-level: 1
// schedule-seed: 1231901276
module {
  func.func @main(%cut5_0: tensor<3xf32>, %cut4_0: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
    %0 = graph.rms_norm %cut4_0, %cut5_0 : (tensor<1x2x3x3xf32>, tensor<3xf32>) -> tensor<1x2x3x3xf32>
    func.return %0 : tensor<1x2x3x3xf32>
  }
}
