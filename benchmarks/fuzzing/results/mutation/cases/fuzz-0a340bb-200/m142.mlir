// tensorium fuzz: mismatch at cpu
// output 5 (tensor<3x2x1xf32>): 5 of 6 elements differ; at [0, 1, 0] got 2.3649515228699086e+20, expected -0.1717710793018341
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-kcyz40xe/out/failures/001-mismatch-cpu.mlir
// pipeline: fold-batch-norm
// seed: 1677840281
// backends: interp,cpu
// opt-level: 1
// schedule-seed: 1487643067
module {
  func.func @main(%x0: tensor<3x2x1xf32>, %x1: tensor<2x5x4xf32>) -> (tensor<2x5x4xf32>, tensor<2x4x1x3xf32>, tensor<3x2x1xi1>, tensor<3x2x1xi1>, tensor<1xf32>, tensor<3x2x1xf32>) {
    %0 = graph.constant {value = dense<[[[[-0.17513637244701385, 0.13219726085662842, 0.8577889800071716, 0.4812631607055664, 0.5145984888076782], [0.5937507152557373, -0.29897069931030273, 0.659783124923706, -0.6082739233970642, 0.7100284099578857]]], [[[-0.7916731834411621, -0.28842106461524963, -0.7255896329879761, -0.9177537560462952, 0.6600896716117859], [-0.40257778763771057, -0.28650838136672974, 0.7178705334663391, -0.834028422832489, -0.8966512680053711]]]]> : tensor<2x1x2x5xf32>} : () -> tensor<2x1x2x5xf32>
    %1 = graph.constant {value = dense<[[[[-0.3698255121707916, 0.834276556968689, -0.9969704151153564, -0.3915327787399292]], [[-0.3663124442100525, -0.9484398365020752, -0.14846943318843842, 0.16306914389133453]]], [[[0.07097122073173523, -0.6990782022476196, 0.38147273659706116, 0.8037069439888]], [[-0.17131675779819489, -0.3217182755470276, 0.1838354915380478, 0.09479759633541107]]]]> : tensor<2x2x1x4xf32>} : () -> tensor<2x2x1x4xf32>
    %2 = graph.conv2d %0, %1 {strides = [1, 2], padding = [0, 0, 0, 2], kernel_layout = "HWIO"} : (tensor<2x1x2x5xf32>, tensor<2x2x1x4xf32>) -> tensor<2x4x1x3xf32>
    %3 = graph.constant {value = dense<-0.6663824319839478> : tensor<1xf32>} : () -> tensor<1xf32>
    %4 = graph.ge %x0, %3 : (tensor<3x2x1xf32>, tensor<1xf32>) -> tensor<3x2x1xi1>
    %5 = graph.constant {value = dense<false> : tensor<1x1xi1>} : () -> tensor<1x1xi1>
    %6 = graph.and %4, %5 : (tensor<3x2x1xi1>, tensor<1x1xi1>) -> tensor<3x2x1xi1>
    %7 = graph.ne %x0, %x0 : (tensor<3x2x1xf32>, tensor<3x2x1xf32>) -> tensor<3x2x1xi1>
    %8 = graph.constant {value = dense<false> : tensor<2x1xi1>} : () -> tensor<2x1xi1>
    %9 = graph.or %7, %8 : (tensor<3x2x1xi1>, tensor<2x1xi1>) -> tensor<3x2x1xi1>
    %10 = graph.broadcast_to %9 {shape = [3, -1, -1]} : (tensor<3x2x1xi1>) -> tensor<3x2x1xi1>
    %11 = graph.log_softmax %x1 {axis = 2} : (tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
    %12 = graph.constant {value = dense<-0.2864305377006531> : tensor<f32>} : () -> tensor<f32>
    %13 = graph.add %11, %12 : (tensor<2x5x4xf32>, tensor<f32>) -> tensor<2x5x4xf32>
    %14 = graph.reduce_sum %3 {axes = [0], keepdims = true} : (tensor<1xf32>) -> tensor<1xf32>
    %15 = graph.abs %x0 : (tensor<3x2x1xf32>) -> tensor<3x2x1xf32>
    %16 = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %17 = graph.add %15, %16 : (tensor<3x2x1xf32>, tensor<f32>) -> tensor<3x2x1xf32>
    %18 = graph.constant {value = dense<0.5770537853240967> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
    %19 = graph.constant {value = dense<-0.1717710793018341> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
    %20 = graph.constant {value = dense<-0.10658464580774307> : tensor<1xf32>} : () -> tensor<1xf32>
    %21 = graph.attention %17, %18, %19, %20 {scale = 0.309} : (tensor<3x2x1xf32>, tensor<1x1xf32>, tensor<1x1xf32>, tensor<1xf32>) -> tensor<3x2x1xf32>
    %22 = graph.mul %11, %13 : (tensor<2x5x4xf32>, tensor<2x5x4xf32>) -> tensor<2x5x4xf32>
    func.return %22, %2, %6, %10, %14, %21 : tensor<2x5x4xf32>, tensor<2x4x1x3xf32>, tensor<3x2x1xi1>, tensor<3x2x1xi1>, tensor<1xf32>, tensor<3x2x1xf32>
  }
}
