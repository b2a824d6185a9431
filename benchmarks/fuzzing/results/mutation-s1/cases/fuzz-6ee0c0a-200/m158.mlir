// tensorium fuzz: crash at cpu build (tensorium/lowering/schedule.py:reorder)
// TypeError: '>=' not supported between instances of 'NoneType' and 'int'
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-1i2lbfuw/out/failures/001-crash-cpu-build.mlir
// pipeline: 
// seed: 1911958745
// backends: interp,cpu,webgpu
// opt-level: 0
module {
  func.func @main(%cut4_0: tensor<1x4xf16>, %cut3_0: tensor<4x1xf16>) -> tensor<4x4xf16> {
    %0 = graph.matmul %cut3_0, %cut4_0 : (tensor<4x1xf16>, tensor<1x4xf16>) -> tensor<4x4xf16>
    func.return %0 : tensor<4x4xf16>
  }
}
