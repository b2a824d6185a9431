// pipeline: pack-quant
// backends: interp
// bug: pack-quant packed a quant.matmul whose activations have a K known only at run time (tensor<1x[s64]xf32>) into a quant.matmul_packed, which the verifier refuses (the packed kernels take a static K); the pass now leaves such products alone, as pack-quant-gpu did (tensorium/passes/pack_quant.py, _pack). Found by the fuzzer's first run with the dynamic-dims mutator (stop 36), seed 3
module {
  func.func @main(%x0: tensor<1x[s64]xf32>) -> tensor<1x2xf32> {
    %0 = graph.constant {value = dense<"0x0100010000010000000100010100000101000101000100010000010001010000010001010000000100010101000100010100000001000000010001010000000000000100010101000101000101010100000100010100000000010001010000010001010101010100000000010000000000010001000100000000010101000000"> : tensor<2x64x!quant<u1:f32, per_group(axis=1, size=32)>>} : () -> tensor<2x64x!quant<u1:f32, per_group(axis=1, size=32)>>
    %1 = graph.constant {value = dense<[[0.03405130282044411, 0.019738342612981796], [0.11115279793739319, 0.016713328659534454]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
    %2 = quant.matmul %x0, %0, %1 : (tensor<1x[s64]xf32>, tensor<2x64x!quant<u1:f32, per_group(axis=1, size=32)>>, tensor<2x2xf32>) -> tensor<1x2xf32>
    func.return %2 : tensor<1x2xf32>
  }
}
