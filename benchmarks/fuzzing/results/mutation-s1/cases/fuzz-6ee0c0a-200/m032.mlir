// tensorium fuzz: crash at pass 'fuse' (tensorium/ir/core.py:result)
// ValueError: graph.compress has 3 results, not one
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-z__4xxdi/out/failures/001-crash-pass-fuse.mlir
// pipeline: fuse
// seed: 1358850598
// backends: interp,cpu,webgpu
// opt-level: 0
// specials: yes
module {
  func.func @main(%x0: tensor<2x1x3xf32>, %cut1_0: tensor<2xi1>, %cut0_0: tensor<2x1x3xf32>) -> tensor<[rows213318]x1x3xf32> {
    %0:3 = graph.compress %cut1_0, %x0, %cut0_0 {dim = "rows213318"} : (tensor<2xi1>, tensor<2x1x3xf32>, tensor<2x1x3xf32>) -> (tensor<[rows213318]x1x3xf32>, tensor<[rows213318]x1x3xf32>, tensor<i64>)
    func.return %0#0 : tensor<[rows213318]x1x3xf32>
  }
}
