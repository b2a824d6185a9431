// tensorium fuzz: crash at webgpu build (tensorium/lowering/webgpu_schedule.py:_ceil_pow2)
// TypeError: unsupported operand type(s) for -: 'NoneType' and 'int'
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-eu_4uhet/out/failures/002-crash-webgpu-build.mlir
// pipeline: 
// seed: 782978775
// backends: interp,webgpu
// opt-level: 0
// specials: yes
module {
  func.func @main(%x0: tensor<4x[s1]x4xf32>) -> tensor<4x[s1]x4xf32> {
    %0 = graph.sign %x0 : (tensor<4x[s1]x4xf32>) -> tensor<4x[s1]x4xf32>
    func.return %0 : tensor<4x[s1]x4xf32>
  }
}
