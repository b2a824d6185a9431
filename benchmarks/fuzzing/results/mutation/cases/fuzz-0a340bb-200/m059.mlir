// tensorium fuzz: missed-rewrite at pass 'canonicalize'
// canonicalize did not rewrite its pattern: @main still returns the result of graph.div
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-wnp7ce16/out/failures/001-missed-rewrite-pass-canonicalize.mlir
// pipeline: canonicalize
// seed: 552547096
// backends: interp
// expect: canonicalize
module {
  func.func @main(%x: tensor<1x1x5x1xf64>) -> (tensor<1x1x5x1xf64>, tensor<1x1x5x1xf64>, tensor<1x1x5x1xf64>) {
    %0 = graph.constant {value = dense<1.0> : tensor<f64>} : () -> tensor<f64>
    %1 = graph.div %x, %0 : (tensor<1x1x5x1xf64>, tensor<f64>) -> tensor<1x1x5x1xf64>
    %2 = graph.transpose %x {perm = [3, 0, 1, 2]} : (tensor<1x1x5x1xf64>) -> tensor<1x1x1x5xf64>
    %3 = graph.transpose %2 {perm = [1, 2, 3, 0]} : (tensor<1x1x1x5xf64>) -> tensor<1x1x5x1xf64>
    %4 = graph.constant {value = dense<0.0> : tensor<1x1x5x1xf64>} : () -> tensor<1x1x5x1xf64>
    %5 = graph.sub %x, %4 : (tensor<1x1x5x1xf64>, tensor<1x1x5x1xf64>) -> tensor<1x1x5x1xf64>
    func.return %1, %3, %5 : tensor<1x1x5x1xf64>, tensor<1x1x5x1xf64>, tensor<1x1x5x1xf64>
  }
}
