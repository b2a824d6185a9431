// RUN: dce
// Dead chains go in one sweep; an op with several results stays while one of them is used.
module {
  func.func @main(%x: tensor<2x4xf32>) -> tensor<2x1xf32> {
    %0 = graph.exp %x : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %1 = graph.tanh %0 : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %2 = graph.add %1, %0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %s:3 = graph.split %x {axis = 1, sizes = [1, 1, 2]} : (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x2xf32>)
    %t:2 = graph.split %x {axis = 1, sizes = [2, 2]} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
    func.return %s#1 : tensor<2x1xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x4xf32>) -> tensor<2x1xf32> {
    %s:3 = graph.split %x {axis = 1, sizes = [1, 1, 2]} : (tensor<2x4xf32>) -> (tensor<2x1xf32>, tensor<2x1xf32>, tensor<2x2xf32>)
    func.return %s#1 : tensor<2x1xf32>
  }
}
// -----
// RUN: dce
// Ops with side effects and what they use stay; dead ops inside their regions go.
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.neg %x : (tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.abs %0 : (tensor<2xf32>) -> tensor<2xf32>
    test.scope %x ({
      %2 = graph.sin %1 : (tensor<2xf32>) -> tensor<2xf32>
      %3 = graph.cos %2 : (tensor<2xf32>) -> tensor<2xf32>
      test.sink %0 : (tensor<2xf32>) -> ()
    }) : (tensor<2xf32>) -> ()
    func.return %x : tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.neg %x : (tensor<2xf32>) -> tensor<2xf32>
    test.scope %x (
      {
        test.sink %0 : (tensor<2xf32>) -> ()
      }
    ) : (tensor<2xf32>) -> ()
    func.return %x : tensor<2xf32>
  }
}
// -----
// RUN: dce
// Must not change: everything is used.
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %c = graph.constant {value = dense<2.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %0 = graph.mul %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %0 : tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %c = graph.constant {value = dense<2.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %0 = graph.mul %x, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %0 : tensor<2xf32>
  }
}
