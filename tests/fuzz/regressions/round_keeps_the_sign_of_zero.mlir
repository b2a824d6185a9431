// bug: the CPU lowering of graph.round computed floor(x) + 1 for fractions above 1/2, so round(-0.3) was +0.0
// where IEEE (and the interpreter) give -0.0; found once the oracle compared the signs of zeros
// pipeline:
// seed: 8
// backends: interp,cpu
// opt-level: 1
module {
  func.func @main(%x: tensor<5x5x2xf32>) -> tensor<5x5x2xf32> {
    %0 = graph.round %x : (tensor<5x5x2xf32>) -> tensor<5x5x2xf32>
    func.return %0 : tensor<5x5x2xf32>
  }
}
