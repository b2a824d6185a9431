// RUN: canonicalize
// x + 0, 0 + x and x - 0 with zeros of x's own type (or a scalar) give x.
module {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %zero = graph.constant {value = dense<0.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %scalar = graph.constant {value = dense<-0.0> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.add %x, %zero : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = graph.add %scalar, %0 : (tensor<f32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = graph.sub %1, %zero : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = graph.relu %2 : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %3 : tensor<2x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = graph.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    func.return %0 : tensor<2x3xf32>
  }
}
// -----
// RUN: canonicalize
// Must not change: x + zeros of a larger shape broadcasts x, 0 - x is a negation, and the zero
// constant is not a splat.
module {
  func.func @main(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) {
    %zeros = graph.constant {value = dense<0.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %mixed = graph.constant {value = dense<[0.0, 0.0, 1.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %zero = graph.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.add %x, %zeros : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = graph.sub %zero, %x : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
    %2 = graph.add %x, %mixed : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    func.return %0, %1, %2 : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>) {
    %zeros = graph.constant {value = dense<0.0> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
    %mixed = graph.constant {value = dense<[0.0, 0.0, 1.0]> : tensor<3xf32>} : () -> tensor<3xf32>
    %zero = graph.constant {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.add %x, %zeros : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = graph.sub %zero, %x : (tensor<f32>, tensor<3xf32>) -> tensor<3xf32>
    %2 = graph.add %x, %mixed : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    func.return %0, %1, %2 : tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>
  }
}
// -----
// RUN: canonicalize
// Must not change: float x * 0 is NaN for x = NaN or inf, and float x - x is NaN for x = inf.
module {
  func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %zero = graph.constant {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
    %0 = graph.mul %x, %zero : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = graph.sub %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    %zero = graph.constant {value = dense<0.0> : tensor<4xf32>} : () -> tensor<4xf32>
    %0 = graph.mul %x, %zero : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = graph.sub %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    func.return %0, %1 : tensor<4xf32>, tensor<4xf32>
  }
}
// -----
// RUN: canonicalize
// Integer x * 0 (broadcasting to a larger shape) and x - x fold to zeros of the result type.
module {
  func.func @main(%x: tensor<3xi32>) -> (tensor<2x3xi32>, tensor<3xi32>, tensor<3xi32>) {
    %zeros = graph.constant {value = dense<0> : tensor<2x1xi32>} : () -> tensor<2x1xi32>
    %zero = graph.constant {value = dense<0> : tensor<3xi32>} : () -> tensor<3xi32>
    %0 = graph.mul %x, %zeros : (tensor<3xi32>, tensor<2x1xi32>) -> tensor<2x3xi32>
    %1 = graph.mul %zero, %x : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %2 = graph.sub %x, %x : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    func.return %0, %1, %2 : tensor<2x3xi32>, tensor<3xi32>, tensor<3xi32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<3xi32>) -> (tensor<2x3xi32>, tensor<3xi32>, tensor<3xi32>) {
    %zero = graph.constant {value = dense<0> : tensor<3xi32>} : () -> tensor<3xi32>
    %0 = graph.constant {value = dense<0> : tensor<2x3xi32>} : () -> tensor<2x3xi32>
    %1 = graph.constant {value = dense<0> : tensor<3xi32>} : () -> tensor<3xi32>
    func.return %0, %zero, %1 : tensor<2x3xi32>, tensor<3xi32>, tensor<3xi32>
  }
}
// -----
// RUN: canonicalize
// x * 1, 1 * x and x / 1 give x for floats and integers; neg(neg(x)) gives x.
module {
  func.func @main(%x: tensor<2xf32>, %n: tensor<2xi8>) -> (tensor<2xf32>, tensor<2xi8>) {
    %one = graph.constant {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %ione = graph.constant {value = dense<1> : tensor<1xi8>} : () -> tensor<1xi8>
    %0 = graph.mul %one, %x : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.div %0, %one : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = graph.neg %1 : (tensor<2xf32>) -> tensor<2xf32>
    %3 = graph.neg %2 : (tensor<2xf32>) -> tensor<2xf32>
    %4 = graph.mul %n, %ione : (tensor<2xi8>, tensor<1xi8>) -> tensor<2xi8>
    %5 = graph.div %4, %ione : (tensor<2xi8>, tensor<1xi8>) -> tensor<2xi8>
    func.return %3, %5 : tensor<2xf32>, tensor<2xi8>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>, %n: tensor<2xi8>) -> (tensor<2xf32>, tensor<2xi8>) {
    func.return %x, %n : tensor<2xf32>, tensor<2xi8>
  }
}
// -----
// RUN: canonicalize
// Symbolic shapes: x + scalar zero keeps x's type, so it folds; x * ones of a larger static
// shape does not keep x's type, so it stays.
module {
  func.func @main(%x: tensor<?x3xf32>, %y: tensor<[n]x1xf32>) -> (tensor<?x3xf32>, tensor<[n]x3xf32>) {
    %zero = graph.constant {value = dense<0.0> : tensor<3xf32>} : () -> tensor<3xf32>
    %ones = graph.constant {value = dense<1.0> : tensor<1x3xf32>} : () -> tensor<1x3xf32>
    %0 = graph.add %x, %zero : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
    %1 = graph.mul %y, %ones : (tensor<[n]x1xf32>, tensor<1x3xf32>) -> tensor<[n]x3xf32>
    func.return %0, %1 : tensor<?x3xf32>, tensor<[n]x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<?x3xf32>, %y: tensor<[n]x1xf32>) -> (tensor<?x3xf32>, tensor<[n]x3xf32>) {
    %ones = graph.constant {value = dense<1.0> : tensor<1x3xf32>} : () -> tensor<1x3xf32>
    %0 = graph.mul %y, %ones : (tensor<[n]x1xf32>, tensor<1x3xf32>) -> tensor<[n]x3xf32>
    func.return %x, %0 : tensor<?x3xf32>, tensor<[n]x3xf32>
  }
}
// -----
// RUN: canonicalize
// transpose(transpose) composes into one transpose; a pair that cancels, and an identity
// permutation, disappear.
module {
  func.func @main(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
    %0 = graph.transpose %x {perm = [1, 0, 2]} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
    %1 = graph.transpose %0 {perm = [2, 1, 0]} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
    %2 = graph.transpose %x {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
    %3 = graph.transpose %2 {perm = [1, 2, 0]} : (tensor<4x2x3xf32>) -> tensor<2x3x4xf32>
    %4 = graph.transpose %x {perm = [0, 1, 2]} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    func.return %1, %3, %4 : tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
    %0 = graph.transpose %x {perm = [2, 0, 1]} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
    func.return %0, %x, %x : tensor<4x2x3xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>
  }
}
// -----
// RUN: canonicalize
// A transpose of the last two axes feeding a matmul becomes the matmul's transpose flag (flipping a
// flag already set); a transpose that moves a batch axis stays.
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<2x3x5xf32>, %c: tensor<2x5x6xf32>, %d: tensor<5x6xf32>) -> (tensor<4x16xf32>, tensor<4x4xf32>, tensor<2x3x6xf32>, tensor<3x2x6xf32>) {
    %0 = graph.transpose %w {perm = [1, 0]} : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %1 = graph.matmul %x, %0 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    %2 = graph.transpose %x {perm = [1, 0]} : (tensor<4x8xf32>) -> tensor<8x4xf32>
    %3 = graph.matmul %2, %2 {transpose_a = true} : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
    %4 = graph.transpose %b {perm = [0, 2, 1]} : (tensor<2x3x5xf32>) -> tensor<2x5x3xf32>
    %5 = graph.matmul %4, %c {transpose_a = true} : (tensor<2x5x3xf32>, tensor<2x5x6xf32>) -> tensor<2x3x6xf32>
    %6 = graph.transpose %b {perm = [1, 0, 2]} : (tensor<2x3x5xf32>) -> tensor<3x2x5xf32>
    %7 = graph.matmul %6, %d : (tensor<3x2x5xf32>, tensor<5x6xf32>) -> tensor<3x2x6xf32>
    func.return %1, %3, %5, %7 : tensor<4x16xf32>, tensor<4x4xf32>, tensor<2x3x6xf32>, tensor<3x2x6xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<16x8xf32>, %b: tensor<2x3x5xf32>, %c: tensor<2x5x6xf32>, %d: tensor<5x6xf32>) -> (tensor<4x16xf32>, tensor<4x4xf32>, tensor<2x3x6xf32>, tensor<3x2x6xf32>) {
    %0 = graph.matmul %x, %w {transpose_b = true} : (tensor<4x8xf32>, tensor<16x8xf32>) -> tensor<4x16xf32>
    %1 = graph.matmul %x, %x {transpose_b = true} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x4xf32>
    %2 = graph.matmul %b, %c : (tensor<2x3x5xf32>, tensor<2x5x6xf32>) -> tensor<2x3x6xf32>
    %3 = graph.transpose %b {perm = [1, 0, 2]} : (tensor<2x3x5xf32>) -> tensor<3x2x5xf32>
    %4 = graph.matmul %3, %d : (tensor<3x2x5xf32>, tensor<5x6xf32>) -> tensor<3x2x6xf32>
    func.return %0, %1, %2, %4 : tensor<4x16xf32>, tensor<4x4xf32>, tensor<2x3x6xf32>, tensor<3x2x6xf32>
  }
}
// -----
// RUN: canonicalize
// reshape(reshape) becomes one reshape (a 0 that copied a dim of the middle value is resolved);
// a reshape back to the input's static type disappears.
module {
  func.func @main(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x4xf32>) {
    %0 = graph.reshape %x {shape = [6, 2, 2]} : (tensor<2x3x4xf32>) -> tensor<6x2x2xf32>
    %1 = graph.reshape %0 {shape = [0, -1]} : (tensor<6x2x2xf32>) -> tensor<6x4xf32>
    %2 = graph.reshape %x {shape = [24]} : (tensor<2x3x4xf32>) -> tensor<24xf32>
    %3 = graph.reshape %2 {shape = [2, 3, 4]} : (tensor<24xf32>) -> tensor<2x3x4xf32>
    func.return %1, %3 : tensor<6x4xf32>, tensor<2x3x4xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x3x4xf32>) -> (tensor<6x4xf32>, tensor<2x3x4xf32>) {
    %0 = graph.reshape %x {shape = [6, -1]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    func.return %0, %x : tensor<6x4xf32>, tensor<2x3x4xf32>
  }
}
// -----
// RUN: canonicalize
// Must not change: a reshape to the same type with two unknown dims may still move data.
module {
  func.func @main(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
    %0 = graph.reshape %x {shape = [-1, 0]} : (tensor<?x?xf32>) -> tensor<?x?xf32>
    func.return %0 : tensor<?x?xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
    %0 = graph.reshape %x {shape = [-1, 0]} : (tensor<?x?xf32>) -> tensor<?x?xf32>
    func.return %0 : tensor<?x?xf32>
  }
}
// -----
// RUN: canonicalize
// A cast to the same element type disappears; cast(cast(x)) skips a widening middle type
// (f32 -> f64 -> f16, i8 -> i32 -> f32) and goes back to x when the outer cast undoes it.
module {
  func.func @main(%x: tensor<2xf32>, %n: tensor<2xi8>) -> (tensor<2xf16>, tensor<2xf32>, tensor<2xf32>) {
    %0 = graph.cast %x {dtype = f32} : (tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.cast %0 {dtype = f64} : (tensor<2xf32>) -> tensor<2xf64>
    %2 = graph.cast %1 {dtype = f16} : (tensor<2xf64>) -> tensor<2xf16>
    %3 = graph.cast %n {dtype = i32} : (tensor<2xi8>) -> tensor<2xi32>
    %4 = graph.cast %3 {dtype = f32} : (tensor<2xi32>) -> tensor<2xf32>
    %5 = graph.cast %1 {dtype = f32} : (tensor<2xf64>) -> tensor<2xf32>
    func.return %2, %4, %5 : tensor<2xf16>, tensor<2xf32>, tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>, %n: tensor<2xi8>) -> (tensor<2xf16>, tensor<2xf32>, tensor<2xf32>) {
    %0 = graph.cast %x {dtype = f16} : (tensor<2xf32>) -> tensor<2xf16>
    %1 = graph.cast %n {dtype = f32} : (tensor<2xi8>) -> tensor<2xf32>
    func.return %0, %1, %x : tensor<2xf16>, tensor<2xf32>, tensor<2xf32>
  }
}
// -----
// RUN: canonicalize
// Must not change: the middle cast rounds (f32 -> f16), narrows (i32 -> i8) or truncates
// (f32 -> i32), so skipping it would change values.
module {
  func.func @main(%x: tensor<2xf32>, %n: tensor<2xi32>) -> (tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) {
    %0 = graph.cast %x {dtype = f16} : (tensor<2xf32>) -> tensor<2xf16>
    %1 = graph.cast %0 {dtype = f32} : (tensor<2xf16>) -> tensor<2xf32>
    %2 = graph.cast %n {dtype = i8} : (tensor<2xi32>) -> tensor<2xi8>
    %3 = graph.cast %2 {dtype = i32} : (tensor<2xi8>) -> tensor<2xi32>
    %4 = graph.cast %x {dtype = i32} : (tensor<2xf32>) -> tensor<2xi32>
    %5 = graph.cast %4 {dtype = f32} : (tensor<2xi32>) -> tensor<2xf32>
    func.return %1, %3, %5 : tensor<2xf32>, tensor<2xi32>, tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>, %n: tensor<2xi32>) -> (tensor<2xf32>, tensor<2xi32>, tensor<2xf32>) {
    %0 = graph.cast %x {dtype = f16} : (tensor<2xf32>) -> tensor<2xf16>
    %1 = graph.cast %0 {dtype = f32} : (tensor<2xf16>) -> tensor<2xf32>
    %2 = graph.cast %n {dtype = i8} : (tensor<2xi32>) -> tensor<2xi8>
    %3 = graph.cast %2 {dtype = i32} : (tensor<2xi8>) -> tensor<2xi32>
    %4 = graph.cast %x {dtype = i32} : (tensor<2xf32>) -> tensor<2xi32>
    %5 = graph.cast %4 {dtype = f32} : (tensor<2xi32>) -> tensor<2xf32>
    func.return %1, %3, %5 : tensor<2xf32>, tensor<2xi32>, tensor<2xf32>
  }
}
// -----
// RUN: canonicalize
// squeeze(unsqueeze(x)) with the same axes (negative ones normalized) gives x; other axes stay.
module {
  func.func @main(%x: tensor<3x1xf32>) -> (tensor<3x1xf32>, tensor<1x3xf32>) {
    %0 = graph.unsqueeze %x {axes = [0, -1]} : (tensor<3x1xf32>) -> tensor<1x3x1x1xf32>
    %1 = graph.squeeze %0 {axes = [3, 0]} : (tensor<1x3x1x1xf32>) -> tensor<3x1xf32>
    %2 = graph.unsqueeze %x {axes = [0]} : (tensor<3x1xf32>) -> tensor<1x3x1xf32>
    %3 = graph.squeeze %2 {axes = [2]} : (tensor<1x3x1xf32>) -> tensor<1x3xf32>
    func.return %1, %3 : tensor<3x1xf32>, tensor<1x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<3x1xf32>) -> (tensor<3x1xf32>, tensor<1x3xf32>) {
    %0 = graph.unsqueeze %x {axes = [0]} : (tensor<3x1xf32>) -> tensor<1x3x1xf32>
    %1 = graph.squeeze %0 {axes = [2]} : (tensor<1x3x1xf32>) -> tensor<1x3xf32>
    func.return %x, %1 : tensor<3x1xf32>, tensor<1x3xf32>
  }
}
// -----
// RUN: canonicalize
// broadcast_to x's own shape and slices that keep every element give x; a real broadcast and a
// slice of an unknown dim that may drop elements stay.
module {
  func.func @main(%x: tensor<2x3xf32>, %y: tensor<?x4xf32>) -> (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<2x3xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
    %0 = graph.broadcast_to %x {shape = [2, -1]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %1 = graph.broadcast_to %x {shape = [4, 2, 3]} : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
    %2 = graph.slice %x {starts = [0, -3], ends = [2, 100], axes = [0, 1]} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %3 = graph.slice %y {starts = [0], ends = [9223372036854775807]} : (tensor<?x4xf32>) -> tensor<?x4xf32>
    %4 = graph.slice %y {starts = [1], ends = [9223372036854775807]} : (tensor<?x4xf32>) -> tensor<?x4xf32>
    func.return %0, %1, %2, %3, %4 : tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<2x3xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x3xf32>, %y: tensor<?x4xf32>) -> (tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<2x3xf32>, tensor<?x4xf32>, tensor<?x4xf32>) {
    %0 = graph.broadcast_to %x {shape = [4, 2, 3]} : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
    %1 = graph.slice %y {starts = [1], ends = [9223372036854775807]} : (tensor<?x4xf32>) -> tensor<?x4xf32>
    func.return %x, %0, %x, %y, %1 : tensor<2x3xf32>, tensor<4x2x3xf32>, tensor<2x3xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  }
}
// -----
// RUN: canonicalize
// Must not change: a reversing slice keeps the type but not the order.
module {
  func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
    %0 = graph.slice %x {starts = [-1], ends = [-9223372036854775807], steps = [-1]} : (tensor<3xf32>) -> tensor<3xf32>
    func.return %0 : tensor<3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
    %0 = graph.slice %x {starts = [-1], ends = [-9223372036854775807], steps = [-1]} : (tensor<3xf32>) -> tensor<3xf32>
    func.return %0 : tensor<3xf32>
  }
}
// -----
// RUN: canonicalize
// Dead pure ops go, including chains and unused constants; ops with effects stay.
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %c = graph.constant {value = dense<3.0> : tensor<2xf32>} : () -> tensor<2xf32>
    %0 = graph.exp %x : (tensor<2xf32>) -> tensor<2xf32>
    %1 = graph.add %0, %c : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    %2 = graph.tanh %x : (tensor<2xf32>) -> tensor<2xf32>
    test.sink %2 : (tensor<2xf32>) -> ()
    func.return %x : tensor<2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
    %0 = graph.tanh %x : (tensor<2xf32>) -> tensor<2xf32>
    test.sink %0 : (tensor<2xf32>) -> ()
    func.return %x : tensor<2xf32>
  }
}
// -----
// RUN: canonicalize
// Must not change: a quantized zero stands for (0 - zero point) * scale, not for 0.
module {
  func.func @main(%x: tensor<2x!quant<i8:f32, per_tensor>>) -> tensor<2x!quant<i8:f32, per_tensor>> {
    %z = graph.constant {value = dense<0> : tensor<2x!quant<i8:f32, per_tensor>>} : () -> tensor<2x!quant<i8:f32, per_tensor>>
    %0 = graph.add %x, %z : (tensor<2x!quant<i8:f32, per_tensor>>, tensor<2x!quant<i8:f32, per_tensor>>) -> tensor<2x!quant<i8:f32, per_tensor>>
    func.return %0 : tensor<2x!quant<i8:f32, per_tensor>>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x!quant<i8:f32, per_tensor>>) -> tensor<2x!quant<i8:f32, per_tensor>> {
    %z = graph.constant {value = dense<0> : tensor<2x!quant<i8:f32, per_tensor>>} : () -> tensor<2x!quant<i8:f32, per_tensor>>
    %0 = graph.add %x, %z : (tensor<2x!quant<i8:f32, per_tensor>>, tensor<2x!quant<i8:f32, per_tensor>>) -> tensor<2x!quant<i8:f32, per_tensor>>
    func.return %0 : tensor<2x!quant<i8:f32, per_tensor>>
  }
}
// -----
// RUN: canonicalize
// Symbolic reshapes: a reshape to its input's own type with one unknown dim is a no-op and goes;
// a chain whose outer 0 copies an unknown dim of the middle value stays as it is.
module {
  func.func @main(%x: tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x4xf32>) {
    %0 = graph.reshape %x {shape = [-1, 2]} : (tensor<?x4xf32>) -> tensor<?x2xf32>
    %1 = graph.reshape %0 {shape = [0, 2]} : (tensor<?x2xf32>) -> tensor<?x2xf32>
    %2 = graph.reshape %x {shape = [0, 2, 2]} : (tensor<?x4xf32>) -> tensor<?x2x2xf32>
    %3 = graph.reshape %2 {shape = [0, 4]} : (tensor<?x2x2xf32>) -> tensor<?x4xf32>
    func.return %1, %3 : tensor<?x2xf32>, tensor<?x4xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<?x4xf32>) -> (tensor<?x2xf32>, tensor<?x4xf32>) {
    %0 = graph.reshape %x {shape = [-1, 2]} : (tensor<?x4xf32>) -> tensor<?x2xf32>
    %1 = graph.reshape %x {shape = [0, 2, 2]} : (tensor<?x4xf32>) -> tensor<?x2x2xf32>
    %2 = graph.reshape %1 {shape = [0, 4]} : (tensor<?x2x2xf32>) -> tensor<?x4xf32>
    func.return %0, %2 : tensor<?x2xf32>, tensor<?x4xf32>
  }
}
// -----
// RUN: canonicalize
// A transpose that only moves dims of size 1 keeps the elements in order: a reshape (a free view on the
// CPU). One that reorders larger dims stays.
module {
  func.func @main(%x: tensor<1x1x8x8xf32>, %y: tensor<2x1x3xf32>) -> (tensor<1x8x8x1xf32>, tensor<1x2x3xf32>, tensor<3x1x2xf32>) {
    %0 = graph.transpose %x {perm = [0, 2, 3, 1]} : (tensor<1x1x8x8xf32>) -> tensor<1x8x8x1xf32>
    %1 = graph.transpose %y {perm = [1, 0, 2]} : (tensor<2x1x3xf32>) -> tensor<1x2x3xf32>
    %2 = graph.transpose %y {perm = [2, 1, 0]} : (tensor<2x1x3xf32>) -> tensor<3x1x2xf32>
    func.return %0, %1, %2 : tensor<1x8x8x1xf32>, tensor<1x2x3xf32>, tensor<3x1x2xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<1x1x8x8xf32>, %y: tensor<2x1x3xf32>) -> (tensor<1x8x8x1xf32>, tensor<1x2x3xf32>, tensor<3x1x2xf32>) {
    %0 = graph.reshape %x {shape = [1, 8, 8, 1]} : (tensor<1x1x8x8xf32>) -> tensor<1x8x8x1xf32>
    %1 = graph.reshape %y {shape = [1, 2, 3]} : (tensor<2x1x3xf32>) -> tensor<1x2x3xf32>
    %2 = graph.transpose %y {perm = [2, 1, 0]} : (tensor<2x1x3xf32>) -> tensor<3x1x2xf32>
    func.return %0, %1, %2 : tensor<1x8x8x1xf32>, tensor<1x2x3xf32>, tensor<3x1x2xf32>
  }
}
// -----
// RUN: canonicalize
// x ** 2 and x ** 3 with a splat exponent become multiplies (as PyTorch computes them, and no powf call
// per element in the kernels); other exponents, a non-splat one, and one that broadcasts x stay powers.
module {
  func.func @main(%x: tensor<4xf32>, %n: tensor<3xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>) {
    %two = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %three = graph.constant {value = dense<3.0> : tensor<4xf32>} : () -> tensor<4xf32>
    %itwo = graph.constant {value = dense<2> : tensor<i32>} : () -> tensor<i32>
    %half = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %mixed = graph.constant {value = dense<[2.0, 3.0, 2.0, 3.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %wide = graph.constant {value = dense<2.0> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
    %0 = graph.pow %x, %two : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %1 = graph.pow %x, %three : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %2 = graph.pow %n, %itwo : (tensor<3xi32>, tensor<i32>) -> tensor<3xi32>
    %3 = graph.pow %x, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %4 = graph.pow %x, %mixed : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %5 = graph.pow %x, %wide : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    func.return %0, %1, %2, %3, %4, %5 : tensor<4xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<4xf32>, %n: tensor<3xi32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>) {
    %half = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %mixed = graph.constant {value = dense<[2.0, 3.0, 2.0, 3.0]> : tensor<4xf32>} : () -> tensor<4xf32>
    %wide = graph.constant {value = dense<2.0> : tensor<2x4xf32>} : () -> tensor<2x4xf32>
    %0 = graph.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %1 = graph.mul %x, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %2 = graph.mul %1, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %3 = graph.mul %n, %n : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %4 = graph.pow %x, %half : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
    %5 = graph.pow %x, %mixed : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %6 = graph.pow %x, %wide : (tensor<4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    func.return %0, %2, %3, %4, %5, %6 : tensor<4xf32>, tensor<4xf32>, tensor<3xi32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>
  }
}
// -----
// RUN: canonicalize
// A fused group whose body folds down to giving its argument (cast(cast(x: i1 -> i32) -> i1) is x) is its
// operand; a group that computes something stays.
module {
  func.func @main(%x: tensor<4xi1>, %y: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xf32>) {
    %0 = graph.fused %x (
      {
      ^bb0(%a: tensor<4xi1>):
        %1 = graph.cast %a {dtype = i32} : (tensor<4xi1>) -> tensor<4xi32>
        %2 = graph.cast %1 {dtype = i1} : (tensor<4xi32>) -> tensor<4xi1>
        graph.yield %2 : (tensor<4xi1>) -> ()
      }
    ) : (tensor<4xi1>) -> tensor<4xi1>
    %3 = graph.fused %y (
      {
      ^bb0(%b: tensor<4xf32>):
        %4 = graph.relu %b : (tensor<4xf32>) -> tensor<4xf32>
        graph.yield %4 : (tensor<4xf32>) -> ()
      }
    ) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %0, %3 : tensor<4xi1>, tensor<4xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<4xi1>, %y: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xf32>) {
    %0 = graph.fused %y (
      {
      ^bb0(%b: tensor<4xf32>):
        %1 = graph.relu %b : (tensor<4xf32>) -> tensor<4xf32>
        graph.yield %1 : (tensor<4xf32>) -> ()
      }
    ) : (tensor<4xf32>) -> tensor<4xf32>
    func.return %x, %0 : tensor<4xi1>, tensor<4xf32>
  }
}

