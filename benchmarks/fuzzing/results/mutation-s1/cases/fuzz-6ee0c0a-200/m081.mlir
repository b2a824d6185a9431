// tensorium fuzz: mismatch at cpu
// output 0 (tensor<3x1xf32>): 3 of 3 elements differ; at [0, 0] got 4.282109260559082, expected 10.064772605895996
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-1tjai2oh/out/failures/001-mismatch-cpu.mlir
// pipeline: pack-quant
// seed: 166078538
// backends: interp,cpu,webgpu
// opt-level: 2
// schedule-seed: 1828863967
module {
  func.func @main(%x0: tensor<3x128xf32>) -> tensor<3x1xf32> {
    %0 = graph.constant {value = dense<"0x0111181F1300131D151B1812181F110807180D090E060D00000F000E1C031F171F040E140F040000041F0F05101D1E0C1F171F1F0E020414070C111F00000B0C0E0A021F1A0C121700061A06181F00031F001D0D1F1D02051B1F09161F0819001F06051F0C0505001F051F0000181603050F1705181F0D001513081A131F1E1F"> : tensor<1x128x!quant<u5:f32, per_channel(axis=0)>>} : () -> tensor<1x128x!quant<u5:f32, per_channel(axis=0)>>
    %1 = graph.constant {value = dense<30.60663604736328> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
    %2 = graph.constant {value = dense<0.1550775170326233> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
    %3 = quant.matmul %x0, %0, %2, %1 : (tensor<3x128xf32>, tensor<1x128x!quant<u5:f32, per_channel(axis=0)>>, tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<3x1xf32>
    func.return %3 : tensor<3x1xf32>
  }
}
