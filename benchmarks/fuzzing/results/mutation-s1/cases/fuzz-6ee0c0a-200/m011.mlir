// tensorium fuzz: mismatch at cpu
// output 1 (tensor<30x2xf32>): 60 of 60 elements differ; at [0, 0] got 0.024226121604442596, expected 0.1533021330833435
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-1dbbj41g/out/failures/001-mismatch-cpu.mlir
// pipeline: 
// seed: 1788089691
// backends: interp,cpu,webgpu
// opt-level: 2
// schedule-seed: 1231901276
module {
  func.func @main(%x1: tensor<1x2x3x30xf32>, %cut1_0: tensor<f32>) -> tensor<30x2xf32> {
    %0 = graph.einsum %x1, %cut1_0 {equation = "abcd,->db"} : (tensor<1x2x3x30xf32>, tensor<f32>) -> tensor<30x2xf32>
    func.return %0 : tensor<30x2xf32>
  }
}
