// pipeline:
// seed: 78381227
// backends: interp,webgpu
// bug: argmax of i1 values compares them with >=, which WGSL has only for numbers (naga: "Operation GreaterEqual can't work with ... Bool"); ordered comparisons of bools now compare u32(x). Unreachable before i64 was held in i32 (argmax's i64 result was refused); found by a WebGPU-only fuzzing run right after it landed (seed 7, after 65 s)
// schedule-seed: 1107257560
module {
  func.func @main(%cut1_0: tensor<5x2x5xi1>) -> tensor<1x2x5xi64> {
    %0 = graph.argmax %cut1_0 {axis = 0, keepdims = true, select_last_index = true} : (tensor<5x2x5xi1>) -> tensor<1x2x5xi64>
    func.return %0 : tensor<1x2x5xi64>
  }
}
