// tensorium fuzz: crash at webgpu build (tensorium/lowering/space.py:__getitem__)
// KeyError: "config conv{algo=blocked,mr=6,nv=1,split=rows,threads=128} has no knob 'bm'"
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-wo7xifsx/out/failures/001-crash-webgpu-build.mlir
// pipeline: 
// seed: 445084102
// backends: interp,webgpu
// opt-level: 0
// schedule-seed: 318188496
// expect: fold-batch-norm
module {
  func.func @main(%x: tensor<4x1x5x4xf32>, %cut0_0: tensor<1x1x3x3xf32>) -> tensor<4x1x5x4xf32> {
    %0 = graph.conv2d %x, %cut0_0 {padding = [1, 1, 1, 1]} : (tensor<4x1x5x4xf32>, tensor<1x1x3x3xf32>) -> tensor<4x1x5x4xf32>
    func.return %0 : tensor<4x1x5x4xf32>
  }
}
