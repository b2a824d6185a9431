// tensorium fuzz: crash at webgpu build (tensorium/backends/emitter.py:value)
// KeyError: 140705413254256
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-vhejaqot/out/failures/001-crash-webgpu-build.mlir
// pipeline: 
// seed: 1147252387
// backends: interp,cpu,webgpu
// opt-level: 1
// specials: yes
// schedule-seed: 968994524
module {
  func.func @main(%x1: tensor<1x20xf32>) -> tensor<20x1xf32> {
    %0 = graph.transpose %x1 {perm = [1, 0]} : (tensor<1x20xf32>) -> tensor<20x1xf32>
    func.return %0 : tensor<20x1xf32>
  }
}
