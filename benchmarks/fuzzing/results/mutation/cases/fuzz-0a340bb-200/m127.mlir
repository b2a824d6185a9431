// tensorium fuzz: mismatch at cpu
// output 2 (tensor<2x2x35xf32>): 7 of 140 elements differ; at [0, 0, 0] got 4.0, expected -9.0
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-ahgl70pw/out/failures/002-mismatch-cpu.mlir
// pipeline: 
// seed: 453946164
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%cut2_0: tensor<2x2x35xf32>) -> tensor<2x2x35xu12> {
    %0 = graph.cast %cut2_0 {dtype = u12} : (tensor<2x2x35xf32>) -> tensor<2x2x35xu12>
    func.return %0 : tensor<2x2x35xu12>
  }
}
