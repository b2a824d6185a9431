// tensorium fuzz: refusal at cpu build
// cpu refuses the optimized program but compiles the original: cannot lower 'graph.matmul_packed' to loops: the CPU lowering packs only f32 weights
// reproduce: tensorium fuzz --replay /tmp/tsm-fuzz-725l3kod/out/failures/001-refusal-cpu-build.mlir
// pipeline: pack-weights
// seed: 460274263
// backends: interp,cpu,cuda
// opt-level: 1
module {
  func.func @main(%x1: tensor<1x5x5xf32>) -> tensor<1x2x2xf32> {
    %0 = graph.abs %x1 : (tensor<1x5x5xf32>) -> tensor<1x5x5xf32>
    %1 = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %2 = graph.add %0, %1 : (tensor<1x5x5xf32>, tensor<f32>) -> tensor<1x5x5xf32>
    %3 = graph.mod %x1, %2 : (tensor<1x5x5xf32>, tensor<1x5x5xf32>) -> tensor<1x5x5xf32>
    %4 = graph.constant {value = dense<[[[2, -3, 1, 2, -3], [3, 0, 1, 0, -5]]]> : tensor<1x2x5xi32>} : () -> tensor<1x2x5xi32>
    %5 = graph.gather_elements %3, %4 {axis = 1} : (tensor<1x5x5xf32>, tensor<1x2x5xi32>) -> tensor<1x2x5xf32>
    %6 = graph.matmul %5, %5 {transpose_b = true} : (tensor<1x2x5xf32>, tensor<1x2x5xf32>) -> tensor<1x2x2xf32>
    %7 = graph.constant {value = dense<2.2360680103302> : tensor<f32>} : () -> tensor<f32>
    %8 = graph.div %6, %7 : (tensor<1x2x2xf32>, tensor<f32>) -> tensor<1x2x2xf32>
    %9 = graph.constant {value = dense<[[0.0, -10000.0], [0.0, 0.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
    %10 = graph.add %8, %9 : (tensor<1x2x2xf32>, tensor<2x2xf32>) -> tensor<1x2x2xf32>
    %11 = graph.softmax %10 : (tensor<1x2x2xf32>) -> tensor<1x2x2xf32>
    %12 = graph.matmul %11, %5 : (tensor<1x2x2xf32>, tensor<1x2x5xf32>) -> tensor<1x2x5xf32>
    %13 = graph.tanh %12 : (tensor<1x2x5xf32>) -> tensor<1x2x5xf32>
    %14 = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %15 = graph.pow %13, %14 : (tensor<1x2x5xf32>, tensor<f32>) -> tensor<1x2x5xf32>
    %16 = graph.constant {value = dense<[-0.6030391454696655, -0.43328264355659485, 0.934240996837616, 0.24197331070899963, -0.4856641888618469]> : tensor<5xf32>} : () -> tensor<5xf32>
    %17 = graph.sigmoid %15 : (tensor<1x2x5xf32>) -> tensor<1x2x5xf32>
    %18 = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %19 = graph.add %17, %18 : (tensor<1x2x5xf32>, tensor<f32>) -> tensor<1x2x5xf32>
    %20 = graph.tanh %16 : (tensor<5xf32>) -> tensor<5xf32>
    %21 = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %22 = graph.mul %20, %21 : (tensor<5xf32>, tensor<f32>) -> tensor<5xf32>
    %23 = graph.pow %19, %22 : (tensor<1x2x5xf32>, tensor<5xf32>) -> tensor<1x2x5xf32>
    %24 = graph.constant {value = dense<[[0.049466781318187714, 0.14322738349437714, -0.34530138969421387, 0.876884400844574, 0.8330642580986023], [-0.48792919516563416, 0.6951619386672974, 0.24318061769008636, -0.5929206609725952, -0.5911078453063965]]> : tensor<2x5xf32>} : () -> tensor<2x5xf32>
    %25 = graph.matmul %23, %24 {transpose_b = true} : (tensor<1x2x5xf32>, tensor<2x5xf32>) -> tensor<1x2x2xf32>
    func.return %25 : tensor<1x2x2xf32>
  }
}
