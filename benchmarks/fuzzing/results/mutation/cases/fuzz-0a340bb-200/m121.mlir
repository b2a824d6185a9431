// tensorium fuzz: crash at cpu build (tensorium/backends/llvm/scalars.py:<listcomp>)
// TypeError: unsupported operand type(s) for <<: 'float' and 'float'
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-jsisnk3h/out/failures/001-crash-cpu-build.mlir
// pipeline: lower-to-loops
// seed: 1642285548
// backends: interp,cpu
// opt-level: 1
module {
  func.func @main(%cut1_0: tensor<3x5x1xf32>) -> tensor<3x5x1xf32> {
    %0 = graph.erf %cut1_0 : (tensor<3x5x1xf32>) -> tensor<3x5x1xf32>
    func.return %0 : tensor<3x5x1xf32>
  }
}
