// pipeline: fuse
// backends: interp,cpu
// bug: fuse's sink-reshapes moved `add(reshape(x: 8 -> 4x2), y: 3x4x2)` above the reshape although the reshaped operand broadcasts in the add, and reshaped y (24 elements) to [8]: the verifier rejected the result; a reshape is sunk only when its result has the elementwise op's shape (tensorium/passes/fuse.py, _sunk_operands). Found by the one-hour campaign, worker 0, seed 910172297
module {
  func.func @main(%x1: tensor<3x4x2xf32>, %cut1_0: tensor<8xf32>) -> tensor<3x4x2xf32> {
    %0 = graph.reshape %cut1_0 {shape = [4, 2]} : (tensor<8xf32>) -> tensor<4x2xf32>
    %1 = graph.add %0, %x1 : (tensor<4x2xf32>, tensor<3x4x2xf32>) -> tensor<3x4x2xf32>
    func.return %1 : tensor<3x4x2xf32>
  }
}
