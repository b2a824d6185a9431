// tensorium fuzz: crash at pass 'lower-to-loops' (tensorium/lowering/kernel.py:broadcast_indices)
// IndexError: list index out of range
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-hyp7vxmy/out/failures/001-crash-pass-lower-to-loops.mlir
// pipeline: lower-to-loops
// seed: 1960127676
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%cut5_0: tensor<1x2xf32>) -> tensor<1x2xf32> {
    %0 = graph.attention %cut5_0, %cut5_0, %cut5_0 {scale = 0.633, causal = true} : (tensor<1x2xf32>, tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
    func.return %0 : tensor<1x2xf32>
  }
}
