// pipeline:
// backends: interp,cpu,webgpu
// bug: the WebGPU binding-size split cut an add of a static 4x4x2 tensor and a dynamic 4x4x[s2] one into bands of rows of the static operand only (a dynamic operand was read whole), so the band's add met shapes [3, 4, 2] and [4, 4, [s2]]: the verifier refused the split module; ops with a dynamic operand or result are not cut (tensorium/lowering/webgpu_split.py, _row_operands). The binding size comes from the low limits the schedule seed draws. Found by the first runs with the dynamic-dims mutator (stop 36), seed 5
// schedule-seed: 648836401
module {
  func.func @main(%x: tensor<4x4x[s2]xu16>, %cut5_0: tensor<4x4x2xu16>) -> tensor<4x4x2xu16> {
    %0 = graph.cast %x {dtype = u32} : (tensor<4x4x[s2]xu16>) -> tensor<4x4x[s2]xu32>
    %1 = graph.cast %0 {dtype = u64} : (tensor<4x4x[s2]xu32>) -> tensor<4x4x[s2]xu64>
    %2 = graph.cast %1 {dtype = u16} : (tensor<4x4x[s2]xu64>) -> tensor<4x4x[s2]xu16>
    %3 = graph.add %cut5_0, %2 : (tensor<4x4x2xu16>, tensor<4x4x[s2]xu16>) -> tensor<4x4x2xu16>
    func.return %3 : tensor<4x4x2xu16>
  }
}
