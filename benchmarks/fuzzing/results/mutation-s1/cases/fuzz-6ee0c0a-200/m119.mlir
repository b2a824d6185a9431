// tensorium fuzz: missed-rewrite at pass 'canonicalize'
// canonicalize did not rewrite its pattern: @main still returns the result of graph.mul
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-jbvcx46j/out/failures/001-missed-rewrite-pass-canonicalize.mlir
// pipeline: dce,canonicalize
// seed: 884861711
// backends: interp
// specials: yes
// schedule-seed: 1249626273
// expect: canonicalize
module {
  func.func @main(%x: tensor<3xi13>) -> (tensor<3xi13>, tensor<3xi13>, tensor<3xi13>) {
    %0 = graph.constant {value = dense<0> : tensor<3xi13>} : () -> tensor<3xi13>
    %1 = graph.mul %0, %x : (tensor<3xi13>, tensor<3xi13>) -> tensor<3xi13>
    %2 = graph.constant {value = dense<1> : tensor<3xi13>} : () -> tensor<3xi13>
    %3 = graph.mul %x, %2 : (tensor<3xi13>, tensor<3xi13>) -> tensor<3xi13>
    %4 = graph.constant {value = dense<0> : tensor<3xi13>} : () -> tensor<3xi13>
    %5 = graph.add %x, %4 : (tensor<3xi13>, tensor<3xi13>) -> tensor<3xi13>
    func.return %1, %3, %5 : tensor<3xi13>, tensor<3xi13>, tensor<3xi13>
  }
}
