// tensorium fuzz: missed-rewrite at pass 'fold-batch-norm'
// fold-batch-norm did not rewrite its pattern: 1 graph.batch_norm left
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-l3drvzne/out/failures/001-missed-rewrite-pass-fold-batch-norm.mlir
// pipeline: dce,fold-batch-norm
// seed: 445084102
// backends: interp,webgpu
// opt-level: 0
// schedule-seed: 318188496
// expect: fold-batch-norm
module {
  func.func @main(%x: tensor<4x1x5x4xf32>) -> tensor<4x1x5x4xf32> {
    %0 = graph.constant {value = dense<[[[[-0.24934834241867065, 0.02836669608950615, -0.5310478210449219], [-0.6520521640777588, -0.22263796627521515, 0.3540380597114563], [-0.9704599976539612, -0.7232095003128052, 0.616216242313385]]]]> : tensor<1x1x3x3xf32>} : () -> tensor<1x1x3x3xf32>
    %1 = graph.conv2d %x, %0 {padding = [1, 1, 1, 1]} : (tensor<4x1x5x4xf32>, tensor<1x1x3x3xf32>) -> tensor<4x1x5x4xf32>
    %2 = graph.constant {value = dense<0.39893075823783875> : tensor<1xf32>} : () -> tensor<1xf32>
    %3 = graph.constant {value = dense<0.11831182986497879> : tensor<1xf32>} : () -> tensor<1xf32>
    %4 = graph.constant {value = dense<-0.8890126347541809> : tensor<1xf32>} : () -> tensor<1xf32>
    %5 = graph.constant {value = dense<0.10154701769351959> : tensor<1xf32>} : () -> tensor<1xf32>
    %6 = graph.batch_norm %1, %3, %4, %5, %2 : (tensor<4x1x5x4xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<4x1x5x4xf32>
    func.return %6 : tensor<4x1x5x4xf32>
  }
}
