// pipeline:
// backends: interp,cpu
// bug: the einsum reference summed f16 products in f16 while the CPU kernel (like matmul) accumulates in f32 and rounds once; fixed in tensorium/ir/dialects/graph/linalg.py (_einsum_reference)
module {
  func.func @main(%x: tensor<4x16xf16>, %w: tensor<16x3xf16>) -> tensor<4x3xf16> {
    %0 = graph.einsum %x, %w {equation = "ij,jk->ik"} : (tensor<4x16xf16>, tensor<16x3xf16>) -> tensor<4x3xf16>
    func.return %0 : tensor<4x3xf16>
  }
}
