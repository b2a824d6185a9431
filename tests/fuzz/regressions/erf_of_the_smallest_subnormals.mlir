// pipeline:
// seed: 1782766406
// backends: interp,cpu
// opt-level: 1
// specials: yes
// bug: f32 erf (tensorium/lowering/decompose.py, erf_f32) gave 0 for the smallest subnormals (1.4e-45 to 1e-44): the rational function's numerator x P(x^2) underflowed, so ceil(erf(x)) was 0 where it is 1; erf is now 2x/sqrt(pi) below 1e-4. Found by the one-hour fuzz campaign (worker 0, special values on)
module {
  func.func @main(%x1: tensor<1x2x18xf32>) -> tensor<1x2x18xf32> {
    %0 = graph.erf %x1 : (tensor<1x2x18xf32>) -> tensor<1x2x18xf32>
    %1 = graph.ceil %0 : (tensor<1x2x18xf32>) -> tensor<1x2x18xf32>
    func.return %1 : tensor<1x2x18xf32>
  }
}
