// pipeline: fuse,canonicalize
// seed: 1428459091
// backends: interp,cpu
// opt-level: 1
// bug: canonicalize folded cast(cast(x: i1 -> i32) -> i1) inside a fused group to x, leaving a group that only gives its argument, which the CPU lowering refuses ('a fused group must compute its result'); a group whose body gives its own arguments is now those operands (graph canonical pattern forwarding_group), and the greedy driver revisits an op whose region's terminator changed. Found by the one-hour fuzz campaign
module {
  func.func @main(%cut0_0: tensor<1xi1>) -> tensor<1xi1> {
    %0 = graph.cast %cut0_0 {dtype = i32} : (tensor<1xi1>) -> tensor<1xi32>
    %1 = graph.cast %0 {dtype = i1} : (tensor<1xi32>) -> tensor<1xi1>
    func.return %1 : tensor<1xi1>
  }
}
