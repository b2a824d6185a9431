// pipeline:
// seed: 1966987666
// backends: interp,cpu
// opt-level: 2
// schedule-seed: 1159234359
// bug: layer_norm's mean was one sequential sum, whose rounding left a row of equal values (a 1x1 image resized to 8x2) with a mean an ulp off its value: the centred row was that ulp, which the tiny variance plus eps 1e-6 scaled to up to 2.8e-4 instead of 0. The mean now adds the sum of the residuals to correct the first sum's rounding, exact for equal values, on the CPU and GPU lowerings. Found by a default fuzzing run (seed 31, 2 workers) at fa12fee
module {
  func.func @main(%x1: tensor<1xf32>, %cut4_0: tensor<1x1x8x2xf32>) -> tensor<1x1x8x2xf32> {
    %0 = graph.reshape %x1 {shape = [1, 1, 1, 1]} : (tensor<1xf32>) -> tensor<1x1x1x1xf32>
    %1 = graph.resize %0 {size = [8, 2], nearest_mode = "ceil"} : (tensor<1x1x1x1xf32>) -> tensor<1x1x8x2xf32>
    %2 = graph.layer_norm %1, %cut4_0 {axis = 0, eps = 1e-06} : (tensor<1x1x8x2xf32>, tensor<1x1x8x2xf32>) -> tensor<1x1x8x2xf32>
    func.return %2 : tensor<1x1x8x2xf32>
  }
}
