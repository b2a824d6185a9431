// RUN: cse,canonicalize
// CSE makes the two transposes one value, so x - x of integers becomes zeros; the transpose of
// those zeros stays (folding constants is fold's job, not canonicalize's).
module {
  func.func @main(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
    %0 = graph.transpose %x {perm = [1, 0]} : (tensor<2x3xi32>) -> tensor<3x2xi32>
    %1 = graph.transpose %x {perm = [1, 0]} : (tensor<2x3xi32>) -> tensor<3x2xi32>
    %2 = graph.sub %0, %1 : (tensor<3x2xi32>, tensor<3x2xi32>) -> tensor<3x2xi32>
    %3 = graph.transpose %2 {perm = [1, 0]} : (tensor<3x2xi32>) -> tensor<2x3xi32>
    %4 = graph.add %x, %3 : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    func.return %4 : tensor<2x3xi32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
    %0 = graph.constant {value = dense<0> : tensor<3x2xi32>} : () -> tensor<3x2xi32>
    %1 = graph.transpose %0 {perm = [1, 0]} : (tensor<3x2xi32>) -> tensor<2x3xi32>
    %2 = graph.add %x, %1 : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    func.return %2 : tensor<2x3xi32>
  }
}
// -----
// RUN: cse,canonicalize,fold,canonicalize
// The same program with folding: the transposed zeros fold to zeros, and x + 0 goes.
module {
  func.func @main(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
    %0 = graph.transpose %x {perm = [1, 0]} : (tensor<2x3xi32>) -> tensor<3x2xi32>
    %1 = graph.transpose %x {perm = [1, 0]} : (tensor<2x3xi32>) -> tensor<3x2xi32>
    %2 = graph.sub %0, %1 : (tensor<3x2xi32>, tensor<3x2xi32>) -> tensor<3x2xi32>
    %3 = graph.transpose %2 {perm = [1, 0]} : (tensor<3x2xi32>) -> tensor<2x3xi32>
    %4 = graph.add %x, %3 : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
    func.return %4 : tensor<2x3xi32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x3xi32>) -> tensor<2x3xi32> {
    func.return %x : tensor<2x3xi32>
  }
}
// -----
// RUN: fold,cse,dce
// Folding creates equal constants that merge; the duplicate exp then merges too, and the
// unused one is gone.
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %a = graph.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %b = graph.constant {value = dense<0.5> : tensor<2xf32>} : () -> tensor<2xf32>
    %0 = graph.add %b, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.mul %x, %0 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = graph.mul %x, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %3 = graph.exp %1 : (tensor<2xf32>) -> tensor<2xf32>
    %4 = graph.exp %2 : (tensor<2xf32>) -> tensor<2xf32>
    %5 = graph.sub %3, %4 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %6 = graph.sin %5 : (tensor<2xf32>) -> tensor<2xf32>
    func.return %5 : tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %a = graph.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %0 = graph.mul %x, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.exp %0 : (tensor<2xf32>) -> tensor<2xf32>
    %2 = graph.sub %1, %1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %2 : tensor<2xf32>
  }
}
// -----
// RUN:
// An empty pipeline leaves the module as it is.
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.neg %x : (tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.neg %0 : (tensor<2xf32>) -> tensor<2xf32>
    func.return %1 : tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.neg %x : (tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.neg %0 : (tensor<2xf32>) -> tensor<2xf32>
    func.return %1 : tensor<2xf32>
  }
}
// -----
// RUN: canonicalise,cse
module {
}
// ERROR: unknown pass 'canonicalise' (did you mean 'canonicalize'?)
// -----
// RUN: canonicalize,cse{aggressive=true}
module {
}
// ERROR: pass 'cse' takes no options, got 'aggressive'
