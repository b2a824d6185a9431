// pipeline: fold-batch-norm,fold-batch-norm
// backends: interp
// bug: fold-batch-norm did not reach a fixpoint: the greedy driver erased the dead second use of the conv after trying the batch norm and did not revisit it (the conv's other users); fixed in tensorium/ir/rewrite.py (_Worklist.op_erased)
module {
  func.func @main(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
    %w = graph.constant {value = dense<[[[[0.5]], [[-0.25]]], [[[0.75]], [[1.0]]]]> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
    %c = graph.conv2d %x, %w : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>) -> tensor<1x2x3x3xf32>
    %s = graph.constant {value = dense<[0.5, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %b = graph.constant {value = dense<[0.1, -0.2]> : tensor<2xf32>} : () -> tensor<2xf32>
    %m = graph.constant {value = dense<[0.3, 0.4]> : tensor<2xf32>} : () -> tensor<2xf32>
    %v = graph.constant {value = dense<[0.9, 0.6]> : tensor<2xf32>} : () -> tensor<2xf32>
    %bn = graph.batch_norm %c, %s, %b, %m, %v : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
    %dead = graph.relu %c : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    func.return %bn : tensor<1x2x3x3xf32>
  }
}
