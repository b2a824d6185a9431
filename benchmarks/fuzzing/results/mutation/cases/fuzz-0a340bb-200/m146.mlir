// tensorium fuzz: crash at cpu build (tensorium/lowering/linalg.py:of)
// IndexError: tuple index out of range
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-9m0t_7bm/out/failures/001-crash-cpu-build.mlir
// pipeline: 
// seed: 2125053281
// backends: interp,cpu
// opt-level: 1
module {
  func.func @main(%cut6_0: tensor<2x3xf32>, %cut5_0: tensor<2x5xf32>) -> tensor<5x3xf32> {
    %0 = graph.matmul %cut5_0, %cut6_0 {transpose_a = true} : (tensor<2x5xf32>, tensor<2x3xf32>) -> tensor<5x3xf32>
    func.return %0 : tensor<5x3xf32>
  }
}
