// bug: WGSL has no unary minus for u32, and the WGSL emitter wrote -(a) for graph.neg of every integer: naga
// rejected the shader of a u9 negation (found by `tensorium fuzz --backends interp,webgpu --gpu-fraction 1 --seed 1`);
// unsigned negation is now 0u - a, wrapped to the type's width
// pipeline: 
// seed: 1264221320
// backends: interp,webgpu
// opt-level: 2
// schedule-seed: 225047703
module {
  func.func @main(%cut6_0: tensor<3xu9>) -> tensor<3xu9> {
    %0 = graph.neg %cut6_0 : (tensor<3xu9>) -> tensor<3xu9>
    func.return %0 : tensor<3xu9>
  }
}
