// bug: the interpreter refused a rank-0 constant of an odd-width integer type (tensor<i15>): wrapping it to
// its width with numpy shifts turned the rank-0 array into a numpy scalar (tensorium/ir/storage.py,
// wrap_integers); found by the generator's odd-width integer recipe
// pipeline: canonicalize
// seed: 3
// backends: interp,cpu
// specials: yes
module {
  func.func @main(%x: tensor<3x4xi32>) -> tensor<3x4xi32> {
    %0 = graph.cast %x {dtype = i15} : (tensor<3x4xi32>) -> tensor<3x4xi15>
    %1 = graph.constant {value = dense<-16384> : tensor<i15>} : () -> tensor<i15>
    %2 = graph.sub %0, %1 : (tensor<3x4xi15>, tensor<i15>) -> tensor<3x4xi15>
    %3 = graph.cast %2 {dtype = i32} : (tensor<3x4xi15>) -> tensor<3x4xi32>
    func.return %3 : tensor<3x4xi32>
  }
}
