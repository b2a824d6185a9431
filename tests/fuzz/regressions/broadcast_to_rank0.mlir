// pipeline:
// backends: interp
// bug: the broadcast_to reference returned np.ascontiguousarray(...), which turns a 0-d result into shape [1], and the interpreter refused a valid program; fixed in tensorium/ir/dialects/graph/shape.py (_broadcast_to_reference)
module {
  func.func @main(%x: tensor<f32>, %y: tensor<1xf32>) -> (tensor<f32>, tensor<3x2xf32>) {
    %0 = graph.broadcast_to %x {shape = []} : (tensor<f32>) -> tensor<f32>
    %1 = graph.broadcast_to %y {shape = [3, 2]} : (tensor<1xf32>) -> tensor<3x2xf32>
    func.return %0, %1 : tensor<f32>, tensor<3x2xf32>
  }
}
