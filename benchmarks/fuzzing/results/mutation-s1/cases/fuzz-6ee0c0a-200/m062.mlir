// tensorium fuzz: crash at cpu build (tensorium/lowering/kernel.py:size)
// IndexError: tuple index out of range
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-06tozyuy/out/failures/001-crash-cpu-build.mlir
// pipeline: 
// seed: 1147252387
// backends: interp,cpu,webgpu
// opt-level: 1
// specials: yes
// schedule-seed: 968994524
module {
  func.func @main(%cut2_0: tensor<3xf32>, %cut1_0: tensor<5x3x2x1xf32>, %cut0_0: tensor<1x5x1x1xf32>) -> tensor<1x3x1x2xf32> {
    %0 = graph.conv_transpose2d %cut0_0, %cut1_0, %cut2_0 {strides = [1, 2], padding = [0, 0, 1, 0], output_padding = [0, 1]} : (tensor<1x5x1x1xf32>, tensor<5x3x2x1xf32>, tensor<3xf32>) -> tensor<1x3x1x2xf32>
    func.return %0 : tensor<1x3x1x2xf32>
  }
}
