// tensorium fuzz: crash at cuda build (tensorium/lowering/nn.py:step)
// IndexError: list index out of range
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-k5jcb25q/out/failures/001-crash-cuda-build.mlir
// pipeline: 
// seed: 1748708619
// backends: interp,cuda
// opt-level: 1
// schedule-seed: 1571971335
module {
  func.func @main(%cut3_0: tensor<1x6x3x2xf32>) -> tensor<1x6x1x1xf32> {
    %0 = graph.max_pool2d %cut3_0 {kernel = [2, 1], strides = [3, 2]} : (tensor<1x6x3x2xf32>) -> tensor<1x6x1x1xf32>
    func.return %0 : tensor<1x6x1x1xf32>
  }
}
