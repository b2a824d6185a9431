// tensorium fuzz: validator at wgsl (naga)
// naga rejects the WGSL of 'neg_10': Shader validation error: Entry point main at Compute is invalid
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-qop635az/out/failures/001-validator-wgsl-naga.mlir
// pipeline: 
// seed: 818949845
// backends: interp,webgpu
// opt-level: 1
// schedule-seed: 969557091
module {
  func.func @main(%cut4_0: tensor<2x35xu12>) -> tensor<2x35xu12> {
    %0 = graph.neg %cut4_0 : (tensor<2x35xu12>) -> tensor<2x35xu12>
    func.return %0 : tensor<2x35xu12>
  }
}
