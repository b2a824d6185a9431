// pipeline:
// backends: interp,cpu
// bug: the attention kernel kept the f16 scores in f32 through the scale, where the reference (like the unfused ops that fuse-attention replaces) rounds to f16 after the product and after the scale: results differed by an f16 ulp; fixed in tensorium/lowering/attention.py (the epilogue rounds)
module {
  func.func @main(%q: tensor<2x3x8xf16>, %k: tensor<2x5x8xf16>, %v: tensor<5x6xf16>, %m: tensor<3x5xf16>) -> tensor<2x3x6xf16> {
    %0 = graph.attention %q, %k, %v, %m {scale = 0.3} : (tensor<2x3x8xf16>, tensor<2x5x8xf16>, tensor<5x6xf16>, tensor<3x5xf16>) -> tensor<2x3x6xf16>
    func.return %0 : tensor<2x3x6xf16>
  }
}
