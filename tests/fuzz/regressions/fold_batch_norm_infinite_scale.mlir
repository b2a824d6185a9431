// bug: fold-batch-norm folded a batch norm with an infinite scale into the convolution's weights, where inf * 0
// and sums of +inf and -inf made NaN of what the unfolded batch norm computes as inf; folds whose weights or
// bias would not be finite are refused now (found with special-value constants)
// pipeline: fold-batch-norm
// seed: 1066
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%cut1_0: tensor<2x2x1x1xf32>) -> tensor<2x3x1x2xf32> {
    %0 = graph.constant {value = dense<[[[[-0.3520546853542328, 0.34737539291381836, -0.4093523323535919], [-0.24183648824691772, -0.479279488325119, 0.3548535704612732]]], [[[-0.3216685652732849, 0.7479918599128723, -0.4065171182155609], [0.8794907331466675, -0.5196973085403442, 0.49717262387275696]]]]> : tensor<2x1x2x3xf32>} : () -> tensor<2x1x2x3xf32>
    %1 = graph.constant {value = dense<[0.8710854649543762, 0.8949439525604248, 0.1947074681520462]> : tensor<3xf32>} : () -> tensor<3xf32>
    %2 = graph.conv2d %cut1_0, %0, %1 {padding = [1, 0, 0, 1], dilations = [1, 2], kernel_layout = "HWIO"} : (tensor<2x2x1x1xf32>, tensor<2x1x2x3xf32>, tensor<3xf32>) -> tensor<2x3x1x2xf32>
    %3 = graph.constant {value = dense<[inf, 0.1611286699771881, 0.6517883539199829]> : tensor<3xf32>} : () -> tensor<3xf32>
    %4 = graph.constant {value = dense<[-0.6090529561042786, -0.1361161768436432, 0.7798659205436707]> : tensor<3xf32>} : () -> tensor<3xf32>
    %5 = graph.constant {value = dense<[0.6364691257476807, -0.7793761491775513, 0.9528687596321106]> : tensor<3xf32>} : () -> tensor<3xf32>
    %6 = graph.constant {value = dense<[0.1405199021100998, 0.2683236002922058, -1.401298464324817e-45]> : tensor<3xf32>} : () -> tensor<3xf32>
    %7 = graph.batch_norm %2, %3, %4, %5, %6 : (tensor<2x3x1x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x1x2xf32>
    func.return %7 : tensor<2x3x1x2xf32>
  }
}

