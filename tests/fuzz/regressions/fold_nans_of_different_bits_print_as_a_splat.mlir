// pipeline: fold
// seed: 1572317403
// backends: interp,cpu
// opt-level: 1
// bug: fold made a constant of NaNs with different bits (a bf16 matmul over nan and -inf), which printed as a list of nan and parsed back as the splat dense<nan>: the print-parse round trip changed the text; DenseAttr.is_splat now takes every NaN as equal (tensorium/ir/attributes.py). Found by the one-hour campaign of issue 19
module {
  func.func @main() -> tensor<2x3xbf16> {
    %0 = graph.constant {value = dense<[[0.1435546875, nan, 0.396484375], [0.125, -inf, 0.408203125]]> : tensor<2x3xbf16>} : () -> tensor<2x3xbf16>
    %1 = graph.constant {value = dense<[[-0.18359375, 0.734375, 0.115234375], [0.16796875, 0.8984375, -0.1953125], [0.6796875, -0.8125, 0.37109375]]> : tensor<3x3xbf16>} : () -> tensor<3x3xbf16>
    %2 = graph.matmul %0, %1 : (tensor<2x3xbf16>, tensor<3x3xbf16>) -> tensor<2x3xbf16>
    %3 = graph.constant {value = dense<[[-0.5, -0.9921875, -0.056396484375], [-0.94921875, -0.734375, 0.6796875], [-0.322265625, 0.57421875, -0.197265625]]> : tensor<3x3xbf16>} : () -> tensor<3x3xbf16>
    %4 = graph.matmul %0, %3 {transpose_b = true} : (tensor<2x3xbf16>, tensor<3x3xbf16>) -> tensor<2x3xbf16>
    %5 = graph.add %2, %4 : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> tensor<2x3xbf16>
    func.return %5 : tensor<2x3xbf16>
  }
}
