// tensorium fuzz: verifier at pass 'lower-to-loops'
// error: 'loop.load' op index #0 must be an index, got buffer<3xf32, global>
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-515yspqw/out/failures/001-verifier-pass-lower-to-loops.mlir
// pipeline: fuse,lower-to-loops
// seed: 903829492
// backends: interp,cpu
// opt-level: 1
// specials: yes
// schedule-seed: 2038637518
module {
  func.func @main(%x0: tensor<3xf32>, %cut1_0: tensor<f32>) -> tensor<3xf32> {
    %0 = graph.abs %x0 : (tensor<3xf32>) -> tensor<3xf32>
    %1 = graph.add %0, %cut1_0 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    func.return %1 : tensor<3xf32>
  }
}
