// tensorium fuzz: verifier at pass 'lower-to-loops'
// error: 'loop.load' op expected 0 indices for buffer<i32, global>, got 1
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-vz247wzq/out/failures/001-verifier-pass-lower-to-loops.mlir
// pipeline: lower-to-loops
// seed: 903829492
// backends: interp,cpu
// opt-level: 1
// specials: yes
// schedule-seed: 2038637518
module {
  func.func @main(%cut0_0: tensor<1x1xf32>) -> tensor<1xf32> {
    %0 = graph.constant {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %1 = graph.embedding %cut0_0, %0 : (tensor<1x1xf32>, tensor<i32>) -> tensor<1xf32>
    func.return %1 : tensor<1xf32>
  }
}
