// pipeline:
// seed: 0
// backends: interp,webgpu
// bug: the WGSL emitter wrote the i32 constant -2**31 as (-2147483648i), which WGSL reads as the negation of 2147483648i, a literal out of range (naga: "numeric literal not representable by target type"); it now writes (-2147483647i - 1i). Reached once an i64 product of two inputs was checked for overflow at run time (its check compares an operand with -2**31) instead of refused
module {
  func.func @main(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
    %0 = graph.mul %a, %b : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
    func.return %0 : tensor<4xi64>
  }
}
