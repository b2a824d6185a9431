// tensorium fuzz: missed-rewrite at pass 'fuse-siblings'
// fuse-siblings did not rewrite its pattern: 2 graph.matmul left: the siblings were not fused into one
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-l76zkhry/out/failures/001-missed-rewrite-pass-fuse-siblings.mlir
// pipeline: fuse-siblings
// seed: 590144603
// backends: interp
// expect: fuse-siblings
module {
  func.func @main(%x: tensor<1x4xf64>) -> tensor<1x4xf64> {
    %0 = graph.constant {value = dense<[[-0.8525881288842878, 0.3665320249451718, 0.598539912958078, 0.2835356162807292], [-0.31031332714999094, 0.11954663793509734, -0.9569600971050791, 0.1253233115061163], [0.7136023494301562, -0.8438935299708599, -0.23336120690433604, -0.6702725649470267], [-0.23998420673348697, -0.9739846532502294, 0.6555258396622907, -0.007513379317464208]]> : tensor<4x4xf64>} : () -> tensor<4x4xf64>
    %1 = graph.matmul %x, %0 : (tensor<1x4xf64>, tensor<4x4xf64>) -> tensor<1x4xf64>
    %2 = graph.constant {value = dense<[[-0.1281638688754425, 0.20358943127290252, 0.7000564085098009, -0.4174785503512246], [-0.464966055189441, -0.9010115845756765, -0.4672018125334183, -0.8675763035904742], [-0.9168830256522253, 0.10546112442073419, -0.6323302251928908, -0.8514845558691573], [0.8334294828266804, -0.7025322150587534, -0.8103384185520643, 0.9413561166544053]]> : tensor<4x4xf64>} : () -> tensor<4x4xf64>
    %3 = graph.matmul %x, %2 : (tensor<1x4xf64>, tensor<4x4xf64>) -> tensor<1x4xf64>
    %4 = graph.add %1, %3 : (tensor<1x4xf64>, tensor<1x4xf64>) -> tensor<1x4xf64>
    func.return %4 : tensor<1x4xf64>
  }
}
