// pipeline: fuse
// seed: 2109320976
// backends: interp,cpu,cuda
// opt-level: 1
// schedule-seed: 602067231
// bug: a conv2d fused with its relu, too small for the general conv family's space, has no config; the generic conv lowering then took the default of the conv alone, which on CUDA is gpu_conv's, and read its (absent) 'algo' knob: KeyError at the CUDA build; it now takes only a 'conv' config (tensorium/lowering/conv.py, conv_tiling). Found by the one-hour fuzz campaign
module {
  func.func @main(%cut3_0: tensor<5x1x1x1xf32>, %cut1_0: tensor<1x1x1x1xf32>) -> tensor<1x5x3x1xf32> {
    %0 = graph.conv2d %cut1_0, %cut3_0 {strides = [1, 2], padding = [2, 0, 0, 0]} : (tensor<1x1x1x1xf32>, tensor<5x1x1x1xf32>) -> tensor<1x5x3x1xf32>
    %1 = graph.relu %0 : (tensor<1x5x3x1xf32>) -> tensor<1x5x3x1xf32>
    func.return %1 : tensor<1x5x3x1xf32>
  }
}
