// tensorium fuzz: mismatch at interp
// output 1 (tensor<1x3x4x3xf32>): 36 of 36 elements differ; at [0, 0, 0, 0] got -0.6504116654396057, expected -0.8683315515518188
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-1e2pd7ks/out/failures/001-mismatch-interp.mlir
// pipeline: fold-batch-norm
// seed: 510212157
// backends: interp,cpu,webgpu
// opt-level: 0
// schedule-seed: 1731040023
module {
  func.func @main(%cut4_0: tensor<3xf32>, %cut2_0: tensor<1x6x5x1xf32>) -> tensor<1x3x4x3xf32> {
    %0 = graph.constant {value = dense<[[[[0.7990749478340149, -0.5622237324714661], [0.4826420247554779, 0.9281966686248779]], [[0.7029418349266052, -0.0], [0.383998841047287, -0.03349517658352852]]], [[[0.7625017166137695, 0.5732120871543884], [0.8841119408607483, -0.10897661745548248]], [[0.29924702644348145, 0.5424017310142517], [-0.6435662508010864, 1.401298464324817e-45]]], [[[0.9854362607002258, 0.5364810228347778], [0.6161114573478699, -0.3854514956474304]], [[0.13724802434444427, 1.401298464324817e-45], [0.3728336691856384, -0.9825420379638672]]]]> : tensor<3x2x2x2xf32>} : () -> tensor<3x2x2x2xf32>
    %1 = graph.conv2d %cut2_0, %0, %cut4_0 {padding = [0, 2, 0, 2], dilations = [1, 2], groups = 3, kernel_layout = "OHWI"} : (tensor<1x6x5x1xf32>, tensor<3x2x2x2xf32>, tensor<3xf32>) -> tensor<1x3x4x3xf32>
    %2 = graph.constant {value = dense<[-0.29317861795425415, 0.03402729332447052, -0.6086602807044983]> : tensor<3xf32>} : () -> tensor<3xf32>
    %3 = graph.constant {value = dense<[-0.41844385862350464, -0.5976483225822449, -0.8182753324508667]> : tensor<3xf32>} : () -> tensor<3xf32>
    %4 = graph.constant {value = dense<[0.3521885871887207, -0.4277413487434387, -1.401298464324817e-45]> : tensor<3xf32>} : () -> tensor<3xf32>
    %5 = graph.constant {value = dense<[0.6840762495994568, 0.8907979726791382, 0.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %6 = graph.batch_norm %1, %2, %3, %4, %5 {axis = -3} : (tensor<1x3x4x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<1x3x4x3xf32>
    func.return %6 : tensor<1x3x4x3xf32>
  }
}
