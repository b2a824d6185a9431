// pipeline: fuse
// backends: interp,cpu
// bug: the default schedule made the row loop of a non-f32 matmul kernel parallel without checking that rows are independent; a fused epilogue storing into a 1 x 1 result writes one element from every row (ScheduleError); fixed in tensorium/lowering/schedule.py (default_schedule)
module {
  func.func @main(%a: tensor<1x4xf16>, %b: tensor<4x1xf16>) -> tensor<1x1xf16> {
    %0 = graph.matmul %a, %b : (tensor<1x4xf16>, tensor<4x1xf16>) -> tensor<1x1xf16>
    %1 = graph.constant {value = dense<0.5> : tensor<f16>} : () -> tensor<f16>
    %2 = graph.mul %0, %1 : (tensor<1x1xf16>, tensor<f16>) -> tensor<1x1xf16>
    func.return %2 : tensor<1x1xf16>
  }
}
