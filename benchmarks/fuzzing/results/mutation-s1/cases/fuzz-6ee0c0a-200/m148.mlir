// tensorium fuzz: mismatch at cpu
// output 1 (tensor<3x3x5x2xf32>): 60 of 90 elements differ; at [0, 1, 0, 0] got 0.07517143338918686, expected 0.08740255236625671
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-127wtl4n/out/failures/001-mismatch-cpu.mlir
// pipeline: 
// seed: 1392018466
// backends: interp,cpu
// opt-level: 0
// specials: yes
// schedule-seed: 1067356743
module {
  func.func @main(%x0: tensor<1x5x3xf32>, %cut5_0: tensor<5x5xf32>, %cut4_0: tensor<3x5x1xf32>, %cut3_0: tensor<3x5x3xf32>) -> tensor<3x3x5x1xf32> {
    %0 = graph.constant {value = dense<[[[-1], [-1], [0]], [[0], [-1], [0]], [[0], [-1], [0]]]> : tensor<3x3x1xi32>} : () -> tensor<3x3x1xi32>
    %1 = graph.gather_nd %x0, %0 : (tensor<1x5x3xf32>, tensor<3x3x1xi32>) -> tensor<3x3x5x3xf32>
    %2 = graph.attention %1, %cut3_0, %cut4_0, %cut5_0 {scale = 0.5773502691896258} : (tensor<3x3x5x3xf32>, tensor<3x5x3xf32>, tensor<3x5x1xf32>, tensor<5x5xf32>) -> tensor<3x3x5x1xf32>
    func.return %2 : tensor<3x3x5x1xf32>
  }
}
