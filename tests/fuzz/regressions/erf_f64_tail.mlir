// pipeline:
// backends: interp,cpu
// bug: the CPU backend computed f64 erf beyond |x| = 2.5 as 1 - erfc with an erfc accurate to only 3e-7 relative, so 1 + erf(x) for x in [-4.5, -5] was off by 1e-6 to 4e-5 relative (found during the mutation study as an f64 mismatch at cpu that failed without the mutant too); f64 erf now calls the C library's erf, as the interpreter does (tensorium/backends/llvm/scalars.py, emit_erf)
module {
  func.func @main(%x: tensor<8xf64>) -> tensor<8xf64> {
    %c = graph.constant {value = dense<[-4.5248, -4.5702, -4.579, -4.6192, -4.6438, -4.726, -4.9378, -4.5]> : tensor<8xf64>} : () -> tensor<8xf64>
    %tiny = graph.constant {value = dense<1.0e-9> : tensor<f64>} : () -> tensor<f64>
    %one = graph.constant {value = dense<1.0> : tensor<f64>} : () -> tensor<f64>
    %scale = graph.constant {value = dense<1.0e10> : tensor<f64>} : () -> tensor<f64>
    %0 = graph.mul %x, %tiny : (tensor<8xf64>, tensor<f64>) -> tensor<8xf64>
    %1 = graph.add %0, %c : (tensor<8xf64>, tensor<8xf64>) -> tensor<8xf64>
    %2 = graph.erf %1 : (tensor<8xf64>) -> tensor<8xf64>
    %3 = graph.add %2, %one : (tensor<8xf64>, tensor<f64>) -> tensor<8xf64>
    %4 = graph.mul %3, %scale : (tensor<8xf64>, tensor<f64>) -> tensor<8xf64>
    func.return %4 : tensor<8xf64>
  }
}
