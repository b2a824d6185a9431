// tensorium fuzz: crash at cpu build (tensorium/backends/llvm/emitter.py:emit_store)
// TypeError: cannot store double to float*: mismatching types
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-p9t0plwa/out/failures/001-crash-cpu-build.mlir
// pipeline: 
// seed: 1960127676
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%cut3_0: tensor<1x2xf32>) -> tensor<1x2xf32> {
    %0 = graph.cumsum %cut3_0 {axis = -1, exclusive = true} : (tensor<1x2xf32>) -> tensor<1x2xf32>
    func.return %0 : tensor<1x2xf32>
  }
}
