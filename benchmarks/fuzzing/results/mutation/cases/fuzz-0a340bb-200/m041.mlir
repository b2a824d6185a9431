// tensorium fuzz: mismatch at cpu
// output 0 (tensor<3x19xf32>): 19 of 57 elements differ; at [1, 0] got 35.76264572143555, expected -0.7776637077331543
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-5_kzjzti/out/failures/001-mismatch-cpu.mlir
// pipeline: 
// seed: 1169464281
// backends: interp,cpu
// opt-level: 1
// specials: yes
// schedule-seed: 2047271259
module {
  func.func @main(%cut3_0: tensor<3x22xf32>, %cut1_0: tensor<19x1xf32>, %cut0_0: tensor<19x22x!quant<i3:f32, per_channel(axis=0)>>) -> tensor<3x19xf32> {
    %0 = quant.matmul %cut3_0, %cut0_0, %cut1_0 : (tensor<3x22xf32>, tensor<19x22x!quant<i3:f32, per_channel(axis=0)>>, tensor<19x1xf32>) -> tensor<3x19xf32>
    func.return %0 : tensor<3x19xf32>
  }
}
