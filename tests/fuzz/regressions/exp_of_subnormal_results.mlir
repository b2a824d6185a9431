// pipeline: canonicalize
// backends: interp,cpu
// bug: the decomposed f32 exp (tensorium/lowering/decompose.py, exp_f32) flushed results below the smallest normal float to 0 (x under -87.3) where numpy's expf gives subnormals down to 2**-149, so a softmax weight of about e**-95 was 0 on the CPU and 0 * -inf made NaN where the interpreter's tiny weight gives -inf; exp now scales by 2**n in two normal halves, so its subnormal results are rounded once. Found by a 20-minute campaign (stop 36), seed 37, worker 1, in a 29-op program; reduced by hand
module {
  func.func @main(%x: tensor<1x2xf32>) -> tensor<1x1xf32> {
    %0 = graph.constant {value = dense<[[0.0, -95.0]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
    %1 = graph.add %x, %0 : (tensor<1x2xf32>, tensor<1x2xf32>) -> tensor<1x2xf32>
    %2 = graph.softmax %1 {axis = -1} : (tensor<1x2xf32>) -> tensor<1x2xf32>
    %3 = graph.constant {value = dense<[[1.0], [-inf]]> : tensor<2x1xf32>} : () -> tensor<2x1xf32>
    %4 = graph.matmul %2, %3 : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>
    func.return %4 : tensor<1x1xf32>
  }
}
