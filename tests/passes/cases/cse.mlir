// RUN: cse
// Equal pure ops merge into the first; commutative ops match with swapped operands,
// non-commutative ones do not.
module {
  func.func @main(%x: tensor<2xf32>, %y: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %0 = graph.add %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.add %y, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = graph.sub %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %3 = graph.sub %y, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %4 = graph.mul %0, %1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %5 = graph.sub %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %6 = graph.mul %5, %3 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %4, %2, %6 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>, %y: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %0 = graph.add %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.sub %x, %y : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = graph.sub %y, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %3 = graph.mul %0, %0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %4 = graph.mul %1, %2 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %3, %1, %4 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
// -----
// RUN: cse
// Must not change: ops that differ only in an attribute (gelu's approximation, 1 versus 1.0,
// a list versus its reverse) and constants of 0.0 and -0.0, which differ in their bits.
module {
  func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %0 = graph.gelu %x : (tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.gelu %x {approximate = "tanh"} : (tensor<2xf32>) -> tensor<2xf32>
    %2 = test.opaque %x {v = 1} : (tensor<2xf32>) -> tensor<2xf32>
    %3 = test.opaque %x {v = 1.0} : (tensor<2xf32>) -> tensor<2xf32>
    %4 = test.opaque %x {v = [1, 2]} : (tensor<2xf32>) -> tensor<2xf32>
    %5 = test.opaque %x {v = [2, 1]} : (tensor<2xf32>) -> tensor<2xf32>
    %6 = graph.constant {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %7 = graph.constant {value = dense<-0.0> : tensor<2xf32>} : () -> tensor<2xf32>
    func.return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %0 = graph.gelu %x : (tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.gelu %x {approximate = "tanh"} : (tensor<2xf32>) -> tensor<2xf32>
    %2 = test.opaque %x {v = 1} : (tensor<2xf32>) -> tensor<2xf32>
    %3 = test.opaque %x {v = 1.0} : (tensor<2xf32>) -> tensor<2xf32>
    %4 = test.opaque %x {v = [1, 2]} : (tensor<2xf32>) -> tensor<2xf32>
    %5 = test.opaque %x {v = [2, 1]} : (tensor<2xf32>) -> tensor<2xf32>
    %6 = graph.constant {value = dense<0.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %7 = graph.constant {value = dense<-0.0> : tensor<2xf32>} : () -> tensor<2xf32>
    func.return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
// -----
// RUN: cse
// NaN attributes equal each other, equal constants merge, and an attribute written at its
// default equals the attribute left out.
module {
  func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %0 = test.opaque %x {v = nan} : (tensor<2xf32>) -> tensor<2xf32>
    %1 = test.opaque %x {v = nan} : (tensor<2xf32>) -> tensor<2xf32>
    %2 = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %3 = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %4 = graph.gelu %x {approximate = "none"} : (tensor<2xf32>) -> tensor<2xf32>
    %5 = graph.gelu %x : (tensor<2xf32>) -> tensor<2xf32>
    func.return %0, %1, %2, %3, %4, %5 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %0 = test.opaque %x {v = nan} : (tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %2 = graph.gelu %x : (tensor<2xf32>) -> tensor<2xf32>
    func.return %0, %0, %1, %1, %2, %2 : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
// -----
// RUN: cse
// Regions: an op inside a region reuses an equal op from the enclosing block, but an op after
// the region does not reuse one from inside it, and sibling regions do not share.
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.neg %x : (tensor<2xf32>) -> tensor<2xf32>
    test.scope %x ({
      %1 = graph.neg %x : (tensor<2xf32>) -> tensor<2xf32>
      %2 = graph.abs %x : (tensor<2xf32>) -> tensor<2xf32>
      test.sink %1, %2 : (tensor<2xf32>, tensor<2xf32>) -> ()
    }) : (tensor<2xf32>) -> ()
    test.scope %x ({
      %3 = graph.abs %x : (tensor<2xf32>) -> tensor<2xf32>
      test.sink %3 : (tensor<2xf32>) -> ()
    }) : (tensor<2xf32>) -> ()
    %4 = graph.abs %x : (tensor<2xf32>) -> tensor<2xf32>
    %5 = graph.add %0, %4 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %5 : tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.neg %x : (tensor<2xf32>) -> tensor<2xf32>
    test.scope %x (
      {
        %1 = graph.abs %x : (tensor<2xf32>) -> tensor<2xf32>
        test.sink %0, %1 : (tensor<2xf32>, tensor<2xf32>) -> ()
      }
    ) : (tensor<2xf32>) -> ()
    test.scope %x (
      {
        %2 = graph.abs %x : (tensor<2xf32>) -> tensor<2xf32>
        test.sink %2 : (tensor<2xf32>) -> ()
      }
    ) : (tensor<2xf32>) -> ()
    %3 = graph.abs %x : (tensor<2xf32>) -> tensor<2xf32>
    %4 = graph.add %0, %3 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %4 : tensor<2xf32>
  }
}
// -----
// RUN: cse
// Functions are separate scopes; ops with side effects never merge.
module {
  func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.exp %x : (tensor<2xf32>) -> tensor<2xf32>
    test.sink %0 : (tensor<2xf32>) -> ()
    test.sink %0 : (tensor<2xf32>) -> ()
    func.return %0 : tensor<2xf32>
  }
  func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.exp %x : (tensor<2xf32>) -> tensor<2xf32>
    func.return %0 : tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.exp %x : (tensor<2xf32>) -> tensor<2xf32>
    test.sink %0 : (tensor<2xf32>) -> ()
    test.sink %0 : (tensor<2xf32>) -> ()
    func.return %0 : tensor<2xf32>
  }
  func.func @g(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.exp %x : (tensor<2xf32>) -> tensor<2xf32>
    func.return %0 : tensor<2xf32>
  }
}
