// bug: the CPU lowering of float graph.mod returned the truncated remainder's zero (-0.0 for a negative
// dividend), where mod takes the sign of the divisor, zeros included (numpy: mod(-2.0, 1.0) is +0.0,
// mod(2.0, -1.0) is -0.0); found once the oracle compared the signs of zeros, with special-value inputs
// pipeline:
// seed: 154
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%d: tensor<1x1x2x1xf32>, %x: tensor<1x4x2x8xf32>) -> tensor<1x4x2x8xf32> {
    %0 = graph.mod %x, %d : (tensor<1x4x2x8xf32>, tensor<1x1x2x1xf32>) -> tensor<1x4x2x8xf32>
    func.return %0 : tensor<1x4x2x8xf32>
  }
}
