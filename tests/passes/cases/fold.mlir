// RUN: fold
// A chain of ops on constants becomes one constant; the constants it used are erased.
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %a = graph.constant {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
    %b = graph.constant {value = dense<[0.5, 0.25]> : tensor<2xf32>} : () -> tensor<2xf32>
    %0 = graph.add %a, %b : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.mul %0, %a : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = graph.sub %1, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %2 : tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.constant {value = dense<[1.5, 4.5]> : tensor<2xf32>} : () -> tensor<2xf32>
    %1 = graph.sub %0, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    func.return %1 : tensor<2xf32>
  }
}
// -----
// RUN: fold
// Equal constants are merged into the first one, folded or not.
module {
  func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
    %a = graph.constant {value = dense<2.0> : tensor<3xf32>} : () -> tensor<3xf32>
    %b = graph.constant {value = dense<3.0> : tensor<3xf32>} : () -> tensor<3xf32>
    %0 = graph.mul %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %six = graph.constant {value = dense<6.0> : tensor<3xf32>} : () -> tensor<3xf32>
    %1 = graph.add %0, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %2 = graph.add %six, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    func.return %1, %2 : tensor<3xf32>, tensor<3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
    %0 = graph.constant {value = dense<6.0> : tensor<3xf32>} : () -> tensor<3xf32>
    %1 = graph.add %0, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %2 = graph.add %0, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    func.return %1, %2 : tensor<3xf32>, tensor<3xf32>
  }
}
// -----
// RUN: fold{max-elements=4}
// Results over max-elements (here 6 > 4) stay unfolded; a 2x2 result (4 elements) folds.
module {
  func.func @main() -> (tensor<2x3xf32>, tensor<2x2xi32>) {
    %a = graph.constant {value = dense<1.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %0 = graph.add %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %b = graph.constant {value = dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>} : () -> tensor<2x2xi32>
    %1 = graph.mul %b, %b : (tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x2xi32>
    func.return %0, %1 : tensor<2x3xf32>, tensor<2x2xi32>
  }
}
// EXPECTED:
module {
  func.func @main() -> (tensor<2x3xf32>, tensor<2x2xi32>) {
    %a = graph.constant {value = dense<1.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %0 = graph.add %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = graph.constant {value = dense<[[1, 4], [9, 16]]> : tensor<2x2xi32>} : () -> tensor<2x2xi32>
    func.return %0, %1 : tensor<2x3xf32>, tensor<2x2xi32>
  }
}
// -----
// RUN: fold
// Folding follows the interpreter exactly: i8 wraps (100 + 100 = -56), integer division by zero
// gives 0, and 0.0 / 0.0 gives NaN.
module {
  func.func @main() -> (tensor<2xi8>, tensor<2xi8>, tensor<f32>) {
    %a = graph.constant {value = dense<100> : tensor<2xi8>} : () -> tensor<2xi8>
    %d = graph.constant {value = dense<[0, 3]> : tensor<2xi8>} : () -> tensor<2xi8>
    %zero = graph.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.add %a, %a : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi8>
    %1 = graph.div %a, %d : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi8>
    %2 = graph.div %zero, %zero : (tensor<f32>, tensor<f32>) -> tensor<f32>
    func.return %0, %1, %2 : tensor<2xi8>, tensor<2xi8>, tensor<f32>
  }
}
// EXPECTED:
module {
  func.func @main() -> (tensor<2xi8>, tensor<2xi8>, tensor<f32>) {
    %0 = graph.constant {value = dense<-56> : tensor<2xi8>} : () -> tensor<2xi8>
    %1 = graph.constant {value = dense<[0, 33]> : tensor<2xi8>} : () -> tensor<2xi8>
    %2 = graph.constant {value = dense<nan> : tensor<f32>} : () -> tensor<f32>
    func.return %0, %1, %2 : tensor<2xi8>, tensor<2xi8>, tensor<f32>
  }
}
// -----
// RUN: fold
// Ops with several results fold to one constant each; ops with a non-constant operand stay.
module {
  func.func @main(%x: tensor<1x1xf32>) -> (tensor<1x1xf32>, tensor<1x2xf32>) {
    %c = graph.constant {value = dense<[[1.0, 2.0, 3.0]]> : tensor<1x3xf32>} : () -> tensor<1x3xf32>
    %s:2 = graph.split %c {axis = 1, sizes = [1, 2]} : (tensor<1x3xf32>) -> (tensor<1x1xf32>, tensor<1x2xf32>)
    %0 = graph.add %s#0, %x : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
    func.return %0, %s#1 : tensor<1x1xf32>, tensor<1x2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<1x1xf32>) -> (tensor<1x1xf32>, tensor<1x2xf32>) {
    %0 = graph.constant {value = dense<1.0> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
    %1 = graph.constant {value = dense<[[2.0, 3.0]]> : tensor<1x2xf32>} : () -> tensor<1x2xf32>
    %2 = graph.add %0, %x : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
    func.return %2, %1 : tensor<1x1xf32>, tensor<1x2xf32>
  }
}
// -----
// RUN: fold
// Shape ops on constants fold too, and an empty (size 0) result is an ordinary constant.
module {
  func.func @main() -> (tensor<3x2xi32>, tensor<0x2xi32>) {
    %c = graph.constant {value = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>} : () -> tensor<2x3xi32>
    %0 = graph.transpose %c {perm = [1, 0]} : (tensor<2x3xi32>) -> tensor<3x2xi32>
    %1 = graph.slice %0 {starts = [3], ends = [5]} : (tensor<3x2xi32>) -> tensor<0x2xi32>
    func.return %0, %1 : tensor<3x2xi32>, tensor<0x2xi32>
  }
}
// EXPECTED:
module {
  func.func @main() -> (tensor<3x2xi32>, tensor<0x2xi32>) {
    %0 = graph.constant {value = dense<[[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>} : () -> tensor<3x2xi32>
    %1 = graph.constant {value = dense<"0x"> : tensor<0x2xi32>} : () -> tensor<0x2xi32>
    func.return %0, %1 : tensor<3x2xi32>, tensor<0x2xi32>
  }
}
// -----
// RUN: fold{max-elements=-1}
module {
}
// ERROR: pass 'fold': max-elements must be at least 0, got -1
// -----
// RUN: fold{max-elements=lots}
module {
}
// ERROR: option 'max-elements' of pass 'fold' expects an integer, got 'lots'
