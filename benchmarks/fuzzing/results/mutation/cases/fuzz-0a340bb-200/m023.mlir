// tensorium fuzz: crash at pass 'lower-to-loops' (tensorium/lowering/plan.py:<genexpr>)
// KeyError: 140583761962432
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-53htp7py/out/failures/001-crash-pass-lower-to-loops.mlir
// pipeline: lower-to-loops
// seed: 1960127676
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%x0: tensor<2xf32>) -> tensor<1x2xf32> {
    %0 = graph.broadcast_to %x0 {shape = [1, 2]} : (tensor<2xf32>) -> tensor<1x2xf32>
    func.return %0 : tensor<1x2xf32>
  }
}
