// pipeline:
// backends: interp
// bug: the pad reference called np.pad on a 0-d array (pads []), which numpy rejects, and the interpreter refused a valid program; fixed in tensorium/ir/dialects/graph/shape.py (_pad_reference)
module {
  func.func @main(%x: tensor<f32>, %i: tensor<i32>) -> (tensor<f32>, tensor<i32>) {
    %0 = graph.pad %x {pads = [], value = 1.0} : (tensor<f32>) -> tensor<f32>
    %1 = graph.pad %i {pads = [], mode = "edge"} : (tensor<i32>) -> tensor<i32>
    func.return %0, %1 : tensor<f32>, tensor<i32>
  }
}
