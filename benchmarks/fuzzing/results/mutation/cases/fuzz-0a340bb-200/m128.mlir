// tensorium fuzz: crash at cuda build (tensorium/lowering/schedule.py:fuse)
// IndexError: list index out of range
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-tjn1r125/out/failures/001-crash-cuda-build.mlir
// pipeline: 
// seed: 1748708619
// backends: interp,cuda
// opt-level: 1
// schedule-seed: 1571971335
module {
  func.func @main(%x1: tensor<1x2x18xf32>) -> tensor<1x2x18xf32> {
    %0 = graph.erf %x1 : (tensor<1x2x18xf32>) -> tensor<1x2x18xf32>
    func.return %0 : tensor<1x2x18xf32>
  }
}
