// tensorium fuzz: missed-rewrite at pass 'canonicalize'
// canonicalize did not rewrite its pattern: @main still returns the result of graph.add
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-010s2jar/out/failures/001-missed-rewrite-pass-canonicalize.mlir
// pipeline: canonicalize
// seed: 1143762311
// backends: interp
// specials: yes
// expect: canonicalize
module {
  func.func @main(%x: tensor<4x4x5xi5>) -> (tensor<4x4x5xi5>, tensor<4x4x5xi5>) {
    %0 = graph.constant {value = dense<0> : tensor<i5>} : () -> tensor<i5>
    %1 = graph.mul %0, %x : (tensor<i5>, tensor<4x4x5xi5>) -> tensor<4x4x5xi5>
    %2 = graph.constant {value = dense<0> : tensor<i5>} : () -> tensor<i5>
    %3 = graph.add %2, %x : (tensor<i5>, tensor<4x4x5xi5>) -> tensor<4x4x5xi5>
    func.return %1, %3 : tensor<4x4x5xi5>, tensor<4x4x5xi5>
  }
}
