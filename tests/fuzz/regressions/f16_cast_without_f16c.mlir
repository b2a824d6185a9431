// bug: on a CPU without F16C (cpu:x86-64) LLVM converts f16 through compiler-rt's __truncsfhf2 and
// __extendhfsf2, which the JIT did not find: the kernel called address 0 and the fuzzer's process died
// (found by the first executions of the cpu:x86-64 backend; the CPU runtime now loads libgcc_s)
// pipeline: canonicalize
// seed: 5
// backends: interp,cpu:x86-64
// opt-level: 1
module {
  func.func @main(%x: tensor<2x3xf32>) -> (tensor<2x3xf16>, tensor<2x3xf32>) {
    %0 = graph.cast %x {dtype = f16} : (tensor<2x3xf32>) -> tensor<2x3xf16>
    %1 = graph.tanh %0 : (tensor<2x3xf16>) -> tensor<2x3xf16>
    %2 = graph.cast %1 {dtype = f32} : (tensor<2x3xf16>) -> tensor<2x3xf32>
    func.return %1, %2 : tensor<2x3xf16>, tensor<2x3xf32>
  }
}
