// tensorium fuzz: mismatch at cpu
// output 0 (tensor<1x2x3x3xf32>): 18 of 18 elements differ; at [0, 0, 0, 0] got nan, expected 2.564023017883301
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-u8_3uj6j/out/failures/001-mismatch-cpu.mlir
// pipeline: 
// seed: 1788089691
// backends: interp,cpu,webgpu
// opt-level: 2
// schedule-seed: 1231901276
module {
  func.func @main(%x1: tensor<1x2x3x30xf32>, %cut1_0: tensor<1x1x3x11xf32>, %cut0_0: tensor<1x1x3x11xi32>) -> tensor<1x2x3x30xf32> {
    %0 = graph.scatter_elements %x1, %cut0_0, %cut1_0 {axis = 3} : (tensor<1x2x3x30xf32>, tensor<1x1x3x11xi32>, tensor<1x1x3x11xf32>) -> tensor<1x2x3x30xf32>
    func.return %0 : tensor<1x2x3x30xf32>
  }
}
