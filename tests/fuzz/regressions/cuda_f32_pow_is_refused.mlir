// bug: LLVM's NVPTX backend cannot select fpow, so an f32 pow aborted the whole process ("LLVM ERROR: Cannot
// select: fpow", found by the first executions of the cuda backend); the NVPTX emitter now refuses it
// pipeline: canonicalize
// seed: 0
// backends: interp,cuda:sm_90
// opt-level: 1
module {
  func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %0 = graph.abs %a : (tensor<4xf32>) -> tensor<4xf32>
    %1 = graph.pow %0, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %1 : tensor<4xf32>
  }
}
