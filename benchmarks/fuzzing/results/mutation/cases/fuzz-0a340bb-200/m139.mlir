// tensorium fuzz: crash at pass 'pack-weights' (tensorium/passes/pack_weights.py:_pack)
// KeyError: 'value'
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-_d3wqywc/out/failures/001-crash-pass-pack-weights.mlir
// pipeline: pack-weights
// seed: 610047356
// backends: interp
// schedule-seed: 1792395223
module {
  func.func @main(%cut7_0: tensor<5x5xf32>, %cut5_0: tensor<1x5xf32>) -> tensor<1x5xf32> {
    %0 = graph.matmul %cut5_0, %cut7_0 : (tensor<1x5xf32>, tensor<5x5xf32>) -> tensor<1x5xf32>
    func.return %0 : tensor<1x5xf32>
  }
}
