// tensorium fuzz: mismatch at cpu
// output 1 (tensor<30x2xf32>): 53 of 60 elements differ; at [0, 0] got 0.15341952443122864, expected 0.1533021330833435
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-_kd4bj3s/out/failures/001-mismatch-cpu.mlir
// pipeline: 
// seed: 1788089691
// backends: interp,cpu,webgpu
// opt-level: 2
// schedule-seed: 1231901276
module {
  func.func @main() -> tensor<f32> {
    %0 = graph.constant {value = dense<-0.09010615199804306> : tensor<f32>} : () -> tensor<f32>
    %1 = graph.tanh %0 : (tensor<f32>) -> tensor<f32>
    func.return %1 : tensor<f32>
  }
}
