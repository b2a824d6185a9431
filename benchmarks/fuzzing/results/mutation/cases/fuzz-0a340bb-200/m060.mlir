// tensorium fuzz: mismatch at cpu
// output 0 (tensor<1x1x2x3xf16>): 4 of 6 elements differ; at [0, 0, 0, 1] got -0.69384765625, expected -inf
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-vwokeuqf/out/failures/001-mismatch-cpu.mlir
// pipeline: 
// seed: 1051263826
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%cut6_0: tensor<1x3xf16>, %cut5_0: tensor<1x1x2x1xf16>) -> tensor<1x1x2x3xf16> {
    %0 = graph.matmul %cut5_0, %cut6_0 : (tensor<1x1x2x1xf16>, tensor<1x3xf16>) -> tensor<1x1x2x3xf16>
    func.return %0 : tensor<1x1x2x3xf16>
  }
}
