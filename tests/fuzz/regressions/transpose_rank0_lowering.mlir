// pipeline:
// backends: interp,cpu
// bug: the transpose lowering seeded its source indices with the first loop's index, and a rank-0 transpose (perm []) has no loop: IndexError; fixed in tensorium/lowering/shape.py (lower_transpose)
module {
  func.func @main(%x: tensor<f32>, %y: tensor<3xi32>) -> (tensor<f32>, tensor<3xi32>) {
    %0 = graph.transpose %x {perm = []} : (tensor<f32>) -> tensor<f32>
    %1 = graph.transpose %y {perm = [0]} : (tensor<3xi32>) -> tensor<3xi32>
    func.return %0, %1 : tensor<f32>, tensor<3xi32>
  }
}
