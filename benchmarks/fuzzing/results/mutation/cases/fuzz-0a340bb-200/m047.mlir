// tensorium fuzz: crash at cuda build (tensorium/ir/builder.py:flatten_values)
// TypeError: expected a Value as operand, got NoneType
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-h73djf_x/out/failures/001-crash-cuda-build.mlir
// pipeline: fuse
// seed: 1748708619
// backends: interp,cuda
// opt-level: 1
// schedule-seed: 1571971335
module {
  func.func @main(%x1: tensor<1x2x18xf32>) -> tensor<1x2x18xf32> {
    %0 = graph.erf %x1 : (tensor<1x2x18xf32>) -> tensor<1x2x18xf32>
    %1 = graph.ceil %0 : (tensor<1x2x18xf32>) -> tensor<1x2x18xf32>
    func.return %1 : tensor<1x2x18xf32>
  }
}
