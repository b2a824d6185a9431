// pipeline: fuse
// backends: interp,cpu
// seed: 489618703
// opt-level: 2
// bug: fuse put graph.min into the epilogue of a reversing slice although min broadcast a convolution's [1, 2, [s2], 33] result to [1, 2, 2, 33] ([s2] may be 1 or 2 at run time), and the fused kernel cannot tell the two apart, so the CPU build refused the fused program ("cannot broadcast ... inside a fused group") where it compiled the original; fuse now merges only ops whose broadcasts are known when compiling (tensorium/passes/fuse.py, _known_broadcasts). Found by a 15-minute campaign (stop 37), seed 40
module {
  func.func @main(%x1: tensor<1x[s2]x[s2]x33xf32>, %cut12_0: tensor<2x2x33xf32>, %cut0_0: tensor<2x2x3x3xf32>) -> tensor<1x2x2x33xf32> {
    %0 = graph.conv2d %x1, %cut0_0 {padding = [1, 1, 1, 1]} : (tensor<1x[s2]x[s2]x33xf32>, tensor<2x2x3x3xf32>) -> tensor<1x2x[s2]x33xf32>
    %1 = graph.slice %cut12_0 {starts = [-1], ends = [-3], axes = [0], steps = [-1]} : (tensor<2x2x33xf32>) -> tensor<2x2x33xf32>
    %2 = graph.min %0, %1 : (tensor<1x2x[s2]x33xf32>, tensor<2x2x33xf32>) -> tensor<1x2x2x33xf32>
    func.return %2 : tensor<1x2x2x33xf32>
  }
}
