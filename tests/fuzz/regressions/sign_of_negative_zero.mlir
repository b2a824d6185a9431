// bug: the CPU lowering of graph.sign returned x itself for zeros, so sign(-0.0) was -0.0 where the
// reference (numpy) gives +0.0; found once the oracle compared the signs of zeros, with special-value inputs
// pipeline:
// seed: 1092
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%x0: tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32> {
    %0 = graph.sign %x0 : (tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
    func.return %0 : tensor<2x2x8x8xf32>
  }
}
