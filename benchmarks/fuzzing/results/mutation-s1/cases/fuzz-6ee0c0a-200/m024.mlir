// tensorium fuzz: crash at cpu build (tensorium/lowering/reduce_columns.py:<listcomp>)
// KeyError: 0
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-j35nsp9r/out/failures/001-crash-cpu-build.mlir
// pipeline: 
// seed: 1663369311
// backends: interp,cpu
// opt-level: 2
// schedule-seed: 1091056501
module {
  func.func @main(%cut13_0: tensor<1x1x2x1xf32>) -> tensor<1x1x2x1xf32> {
    %0 = graph.reduce_prod %cut13_0 {axes = [0], keepdims = true} : (tensor<1x1x2x1xf32>) -> tensor<1x1x2x1xf32>
    func.return %0 : tensor<1x1x2x1xf32>
  }
}
