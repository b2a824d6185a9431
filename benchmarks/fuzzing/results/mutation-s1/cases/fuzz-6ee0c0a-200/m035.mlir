// tensorium fuzz: crash at cpu build (tensorium/backends/llvm/pool.py:_run_claims)
// TypeError: _PoolBuilder.smin() takes 3 positional arguments but 4 were given
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-jrv_65c0/out/failures/001-crash-cpu-build.mlir
// pipeline: 
// seed: 1960127676
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%cut0_0: tensor<1x2xf32>) -> tensor<1x2xf32> {
    func.return %cut0_0 : tensor<1x2xf32>
  }
}
