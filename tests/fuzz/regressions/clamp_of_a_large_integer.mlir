// pipeline:
// seed: 1734347956
// backends: interp,cpu
// bug: the interpreter clamped integers through float64 (numpy's maximum of an int64 array and the float bound np.ceil(min)), so 2**62 - 1 came back as 2**62 and the cast to i64 of i63 values disagreed with the CPU; integer bounds are now the nearest integer inside the float bound, within the dtype's range
module {
  func.func @main(%cut3_0: tensor<3xi63>) -> tensor<3xi64> {
    %0 = graph.constant {value = dense<4611686018427387903> : tensor<i63>} : () -> tensor<i63>
    %1 = graph.max %0, %cut3_0 : (tensor<i63>, tensor<3xi63>) -> tensor<3xi63>
    %2 = graph.cast %1 {dtype = i64} : (tensor<3xi63>) -> tensor<3xi64>
    %3 = graph.clamp %2 {min = -0.5} : (tensor<3xi64>) -> tensor<3xi64>
    func.return %3 : tensor<3xi64>
  }
}
