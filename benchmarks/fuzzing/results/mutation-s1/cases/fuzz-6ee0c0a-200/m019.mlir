// tensorium fuzz: crash at cpu build (tensorium/backends/llvm/emitter.py:from_memory)
// AttributeError: 'FloatType' object has no attribute 'is_bool'
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-6orhwvm2/out/failures/001-crash-cpu-build.mlir
// pipeline: 
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
