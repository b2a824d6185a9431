// tensorium fuzz: crash at pass 'lower-to-loops' (tensorium/lowering/codegen.py:lower_and_schedule)
// AssertionError
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-4nbogiid/out/failures/001-crash-pass-lower-to-loops.mlir
// pipeline: lower-to-loops
// seed: 1960127676
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%cut0_0: tensor<1x2xf32>) -> tensor<1x2xf32> {
    func.return %cut0_0 : tensor<1x2xf32>
  }
}
