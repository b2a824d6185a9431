// RUN: fuse
// A matmul takes its epilogue: the bias add, a reshape that only adds a size-1 dim, the residual add and
// the activation become one graph.fused group with the matmul as its anchor.
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>, %r: tensor<1x4x3xf32>) -> tensor<1x4x3xf32> {
    %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %1 = graph.add %0, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %2 = graph.reshape %1 {shape = [1, 4, 3]} : (tensor<4x3xf32>) -> tensor<1x4x3xf32>
    %3 = graph.add %2, %r : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    %4 = graph.relu %3 : (tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    func.return %4 : tensor<1x4x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>, %r: tensor<1x4x3xf32>) -> tensor<1x4x3xf32> {
    %0 = graph.fused %x, %w, %b, %r (
      {
      ^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x3xf32>, %arg2: tensor<3xf32>, %arg3: tensor<1x4x3xf32>):
        %1 = graph.matmul %arg0, %arg1 : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
        %2 = graph.add %1, %arg2 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
        %3 = graph.reshape %2 {shape = [1, 4, 3]} : (tensor<4x3xf32>) -> tensor<1x4x3xf32>
        %4 = graph.add %3, %arg3 : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
        %5 = graph.relu %4 : (tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
        graph.yield %5 : (tensor<1x4x3xf32>) -> ()
      }
    ) : (tensor<4x8xf32>, tensor<8x3xf32>, tensor<3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    func.return %0 : tensor<1x4x3xf32>
  }
}
// -----
// RUN: fuse
// A softmax takes the elementwise op that feeds its data (recomputed at its loads); an elementwise chain
// becomes one group.
module {
  func.func @main(%x: tensor<2x5xf32>, %y: tensor<2x5xf32>, %s: tensor<f32>) -> (tensor<2x5xf32>, tensor<2x5xf32>) {
    %0 = graph.mul %x, %s : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
    %1 = graph.softmax %0 : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %2 = graph.add %x, %y : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    %3 = graph.exp %2 : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %4 = graph.neg %3 : (tensor<2x5xf32>) -> tensor<2x5xf32>
    func.return %1, %4 : tensor<2x5xf32>, tensor<2x5xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x5xf32>, %y: tensor<2x5xf32>, %s: tensor<f32>) -> (tensor<2x5xf32>, tensor<2x5xf32>) {
    %0 = graph.fused %x, %s (
      {
      ^bb0(%arg0: tensor<2x5xf32>, %arg1: tensor<f32>):
        %1 = graph.mul %arg0, %arg1 : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
        %2 = graph.softmax %1 : (tensor<2x5xf32>) -> tensor<2x5xf32>
        graph.yield %2 : (tensor<2x5xf32>) -> ()
      }
    ) : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
    %3 = graph.fused %x, %y (
      {
      ^bb0(%arg2: tensor<2x5xf32>, %arg3: tensor<2x5xf32>):
        %4 = graph.add %arg2, %arg3 : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
        %5 = graph.exp %4 : (tensor<2x5xf32>) -> tensor<2x5xf32>
        %6 = graph.neg %5 : (tensor<2x5xf32>) -> tensor<2x5xf32>
        graph.yield %6 : (tensor<2x5xf32>) -> ()
      }
    ) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    func.return %0, %3 : tensor<2x5xf32>, tensor<2x5xf32>
  }
}
// -----
// RUN: fuse
// Not fused: an elementwise producer of a matmul operand (it would be recomputed for every column tile),
// the epilogue past a value that is used twice (%2 is returned), a producer whose result is broadcast
// (sqrt of a [3] vector added to [4, 3]), and a contiguous slice (a free view, not a kernel).
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %v: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x8xf32>) {
    %0 = graph.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = graph.matmul %0, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %2 = graph.relu %1 : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %3 = graph.neg %2 : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %4 = graph.sqrt %v : (tensor<3xf32>) -> tensor<3xf32>
    %5 = graph.add %3, %4 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %6 = graph.slice %x {starts = [1], ends = [3]} : (tensor<4x8xf32>) -> tensor<2x8xf32>
    %7 = graph.tanh %6 : (tensor<2x8xf32>) -> tensor<2x8xf32>
    func.return %2, %5, %5, %7 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x8xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %v: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x8xf32>) {
    %0 = graph.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = graph.fused %0, %w (
      {
      ^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x3xf32>):
        %2 = graph.matmul %arg0, %arg1 : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
        %3 = graph.relu %2 : (tensor<4x3xf32>) -> tensor<4x3xf32>
        graph.yield %3 : (tensor<4x3xf32>) -> ()
      }
    ) : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %4 = graph.sqrt %v : (tensor<3xf32>) -> tensor<3xf32>
    %5 = graph.fused %1, %4 (
      {
      ^bb0(%arg2: tensor<4x3xf32>, %arg3: tensor<3xf32>):
        %6 = graph.neg %arg2 : (tensor<4x3xf32>) -> tensor<4x3xf32>
        %7 = graph.add %6, %arg3 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
        graph.yield %7 : (tensor<4x3xf32>) -> ()
      }
    ) : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %8 = graph.slice %x {starts = [1], ends = [3]} : (tensor<4x8xf32>) -> tensor<2x8xf32>
    %9 = graph.tanh %8 : (tensor<2x8xf32>) -> tensor<2x8xf32>
    func.return %1, %5, %5, %9 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<2x8xf32>
  }
}
// -----
// RUN: fuse{epilogues=false}
// Without epilogue fusion the matmul stays alone; the elementwise ops after it still form one group.
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>, %r: tensor<1x4x3xf32>) -> tensor<1x4x3xf32> {
    %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %1 = graph.add %0, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %2 = graph.reshape %1 {shape = [1, 4, 3]} : (tensor<4x3xf32>) -> tensor<1x4x3xf32>
    %3 = graph.add %2, %r : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    %4 = graph.relu %3 : (tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    func.return %4 : tensor<1x4x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>, %r: tensor<1x4x3xf32>) -> tensor<1x4x3xf32> {
    %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %1 = graph.fused %0, %b, %r (
      {
      ^bb0(%arg0: tensor<4x3xf32>, %arg1: tensor<3xf32>, %arg2: tensor<1x4x3xf32>):
        %2 = graph.add %arg0, %arg1 : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
        %3 = graph.reshape %2 {shape = [1, 4, 3]} : (tensor<4x3xf32>) -> tensor<1x4x3xf32>
        %4 = graph.add %3, %arg2 : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
        %5 = graph.relu %4 : (tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
        graph.yield %5 : (tensor<1x4x3xf32>) -> ()
      }
    ) : (tensor<4x3xf32>, tensor<3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    func.return %1 : tensor<1x4x3xf32>
  }
}
// -----
// RUN: fuse{producers=false,max-ops=2}
// Without producer fusion the softmax stays alone; groups hold at most two ops.
module {
  func.func @main(%x: tensor<2x5xf32>, %y: tensor<2x5xf32>, %s: tensor<f32>) -> (tensor<2x5xf32>, tensor<2x5xf32>) {
    %0 = graph.mul %x, %s : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
    %1 = graph.softmax %0 : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %2 = graph.add %x, %y : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    %3 = graph.exp %2 : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %4 = graph.neg %3 : (tensor<2x5xf32>) -> tensor<2x5xf32>
    func.return %1, %4 : tensor<2x5xf32>, tensor<2x5xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x5xf32>, %y: tensor<2x5xf32>, %s: tensor<f32>) -> (tensor<2x5xf32>, tensor<2x5xf32>) {
    %0 = graph.mul %x, %s : (tensor<2x5xf32>, tensor<f32>) -> tensor<2x5xf32>
    %1 = graph.softmax %0 : (tensor<2x5xf32>) -> tensor<2x5xf32>
    %2 = graph.fused %x, %y (
      {
      ^bb0(%arg0: tensor<2x5xf32>, %arg1: tensor<2x5xf32>):
        %3 = graph.add %arg0, %arg1 : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
        %4 = graph.exp %3 : (tensor<2x5xf32>) -> tensor<2x5xf32>
        graph.yield %4 : (tensor<2x5xf32>) -> ()
      }
    ) : (tensor<2x5xf32>, tensor<2x5xf32>) -> tensor<2x5xf32>
    %5 = graph.neg %2 : (tensor<2x5xf32>) -> tensor<2x5xf32>
    func.return %1, %5 : tensor<2x5xf32>, tensor<2x5xf32>
  }
}
// -----
// RUN: fuse{max-ops=0}
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %b: tensor<3xf32>, %r: tensor<1x4x3xf32>) -> tensor<1x4x3xf32> {
    %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %1 = graph.add %0, %b : (tensor<4x3xf32>, tensor<3xf32>) -> tensor<4x3xf32>
    %2 = graph.reshape %1 {shape = [1, 4, 3]} : (tensor<4x3xf32>) -> tensor<1x4x3xf32>
    %3 = graph.add %2, %r : (tensor<1x4x3xf32>, tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    %4 = graph.relu %3 : (tensor<1x4x3xf32>) -> tensor<1x4x3xf32>
    func.return %4 : tensor<1x4x3xf32>
  }
}
// ERROR: max-ops must be at least 1, got 0
// -----
// RUN: fuse
// torch.export's linear layers on [batch, seq, d]: reshape to 2-D, matmul, reshape back. The GELU, the bias (a
// trailing broadcast) and the residual add (reshaped to the matmul's shape, a view) move above the reshapes
// and join the matmuls' epilogues; the reshape back and the one to 2-D fold away; the layer norm reads a view.
module {
  func.func @main(%x: tensor<2x3x4xf32>, %w: tensor<4x8xf32>, %w2: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
    %0 = graph.reshape %x {shape = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    %1 = graph.matmul %0, %w : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
    %2 = graph.reshape %1 {shape = [2, 3, 8]} : (tensor<6x8xf32>) -> tensor<2x3x8xf32>
    %3 = graph.gelu %2 : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %4 = graph.reshape %3 {shape = [6, 8]} : (tensor<2x3x8xf32>) -> tensor<6x8xf32>
    %5 = graph.matmul %4, %w2 : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
    %6 = graph.reshape %5 {shape = [2, 3, 4]} : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
    %7 = graph.add %6, %b : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
    %8 = graph.add %7, %x : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    %9 = graph.layer_norm %8 {eps = 1e-5} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    func.return %9 : tensor<2x3x4xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<2x3x4xf32>, %w: tensor<4x8xf32>, %w2: tensor<8x4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
    %0 = graph.reshape %x {shape = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    %1 = graph.fused %0, %w (
      {
      ^bb0(%arg0: tensor<6x4xf32>, %arg1: tensor<4x8xf32>):
        %2 = graph.matmul %arg0, %arg1 : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
        %3 = graph.gelu %2 : (tensor<6x8xf32>) -> tensor<6x8xf32>
        graph.yield %3 : (tensor<6x8xf32>) -> ()
      }
    ) : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
    %4 = graph.reshape %x {shape = [6, 4]} : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
    %5 = graph.fused %1, %w2, %b, %4 (
      {
      ^bb0(%arg2: tensor<6x8xf32>, %arg3: tensor<8x4xf32>, %arg4: tensor<4xf32>, %arg5: tensor<6x4xf32>):
        %6 = graph.matmul %arg2, %arg3 : (tensor<6x8xf32>, tensor<8x4xf32>) -> tensor<6x4xf32>
        %7 = graph.add %6, %arg4 : (tensor<6x4xf32>, tensor<4xf32>) -> tensor<6x4xf32>
        %8 = graph.add %7, %arg5 : (tensor<6x4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
        graph.yield %8 : (tensor<6x4xf32>) -> ()
      }
    ) : (tensor<6x8xf32>, tensor<8x4xf32>, tensor<4xf32>, tensor<6x4xf32>) -> tensor<6x4xf32>
    %9 = graph.reshape %5 {shape = [2, 3, 4]} : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
    %10 = graph.layer_norm %9 : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
    func.return %10 : tensor<2x3x4xf32>
  }
}
// -----
// RUN: fuse
// A value read by several ops of one epilogue (GPT-2's tanh GELU reads the matmul's result four times)
// joins once all its readers are in the group; a matmul whose result is also returned keeps it.
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %v: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
    %c = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.matmul %x, %w : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %1 = graph.mul %0, %c : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %2 = graph.mul %0, %0 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %3 = graph.add %0, %2 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %4 = graph.tanh %3 : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %5 = graph.mul %1, %4 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %6 = graph.matmul %x, %v : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %7 = graph.mul %6, %6 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %8 = graph.tanh %7 : (tensor<4x3xf32>) -> tensor<4x3xf32>
    func.return %5, %8, %6 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>, %v: tensor<8x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
    %c = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.fused %x, %w, %c (
      {
      ^bb0(%arg0: tensor<4x8xf32>, %arg1: tensor<8x3xf32>, %arg2: tensor<f32>):
        %1 = graph.matmul %arg0, %arg1 : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
        %2 = graph.mul %1, %arg2 : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
        %3 = graph.mul %1, %1 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
        %4 = graph.add %1, %3 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
        %5 = graph.tanh %4 : (tensor<4x3xf32>) -> tensor<4x3xf32>
        %6 = graph.mul %2, %5 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
        graph.yield %6 : (tensor<4x3xf32>) -> ()
      }
    ) : (tensor<4x8xf32>, tensor<8x3xf32>, tensor<f32>) -> tensor<4x3xf32>
    %7 = graph.matmul %x, %v : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %8 = graph.fused %7 (
      {
      ^bb0(%arg3: tensor<4x3xf32>):
        %9 = graph.mul %arg3, %arg3 : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
        %10 = graph.tanh %9 : (tensor<4x3xf32>) -> tensor<4x3xf32>
        graph.yield %10 : (tensor<4x3xf32>) -> ()
      }
    ) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    func.return %0, %8, %7 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>
  }
}
// -----
// RUN: fuse
// GPT-2's tanh GELU reads the reshaped matmul result three times (x * 0.5, x * x, x + ...): a reshape whose
// users all move above it moves out of the way, and the GELU joins the matmul's epilogue on the 2-D shape.
module {
  func.func @main(%x: tensor<6x4xf32>, %w: tensor<4x8xf32>) -> tensor<2x3x8xf32> {
    %c = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.matmul %x, %w : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
    %1 = graph.reshape %0 {shape = [2, 3, 8]} : (tensor<6x8xf32>) -> tensor<2x3x8xf32>
    %2 = graph.mul %1, %c : (tensor<2x3x8xf32>, tensor<f32>) -> tensor<2x3x8xf32>
    %3 = graph.mul %1, %1 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %4 = graph.tanh %3 : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %5 = graph.add %1, %4 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %6 = graph.mul %2, %5 : (tensor<2x3x8xf32>, tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    func.return %6 : tensor<2x3x8xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<6x4xf32>, %w: tensor<4x8xf32>) -> tensor<2x3x8xf32> {
    %c = graph.constant {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
    %0 = graph.fused %x, %w, %c (
      {
      ^bb0(%arg0: tensor<6x4xf32>, %arg1: tensor<4x8xf32>, %arg2: tensor<f32>):
        %1 = graph.matmul %arg0, %arg1 : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
        %2 = graph.mul %1, %arg2 : (tensor<6x8xf32>, tensor<f32>) -> tensor<6x8xf32>
        %3 = graph.mul %1, %1 : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
        %4 = graph.tanh %3 : (tensor<6x8xf32>) -> tensor<6x8xf32>
        %5 = graph.add %1, %4 : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
        %6 = graph.mul %2, %5 : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32>
        graph.yield %6 : (tensor<6x8xf32>) -> ()
      }
    ) : (tensor<6x4xf32>, tensor<4x8xf32>, tensor<f32>) -> tensor<6x8xf32>
    %7 = graph.reshape %0 {shape = [2, 3, 8]} : (tensor<6x8xf32>) -> tensor<2x3x8xf32>
    func.return %7 : tensor<2x3x8xf32>
  }
}
// -----
// RUN: fuse
// A reshape that a reduction reads too stays: the elementwise reader does not move above it, so the matmul's
// result is read through one view.
module {
  func.func @main(%x: tensor<6x4xf32>, %w: tensor<4x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3xf32>) {
    %0 = graph.matmul %x, %w : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
    %1 = graph.reshape %0 {shape = [2, 3, 8]} : (tensor<6x8xf32>) -> tensor<2x3x8xf32>
    %2 = graph.tanh %1 : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %3 = graph.reduce_sum %1 {axes = [2]} : (tensor<2x3x8xf32>) -> tensor<2x3xf32>
    func.return %2, %3 : tensor<2x3x8xf32>, tensor<2x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<6x4xf32>, %w: tensor<4x8xf32>) -> (tensor<2x3x8xf32>, tensor<2x3xf32>) {
    %0 = graph.matmul %x, %w : (tensor<6x4xf32>, tensor<4x8xf32>) -> tensor<6x8xf32>
    %1 = graph.reshape %0 {shape = [2, 3, 8]} : (tensor<6x8xf32>) -> tensor<2x3x8xf32>
    %2 = graph.tanh %1 : (tensor<2x3x8xf32>) -> tensor<2x3x8xf32>
    %3 = graph.reduce_sum %1 {axes = [2]} : (tensor<2x3x8xf32>) -> tensor<2x3xf32>
    func.return %2, %3 : tensor<2x3x8xf32>, tensor<2x3xf32>
  }
}
// -----
// RUN: fuse
// Elementwise ops move above a reshape only towards fewer dims: moving this mul to [1, 2, 1, 5, 4] would leave a
// reshape of the constant to that shape, which the next run would move it back through (no fixpoint).
module {
  func.func @main(%x: tensor<1x2x1x5x4xf32>, %c: tensor<40xf32>) -> tensor<40xf32> {
    %0 = graph.transpose %x {perm = [0, 1, 2, 4, 3]} : (tensor<1x2x1x5x4xf32>) -> tensor<1x2x1x4x5xf32>
    %1 = graph.reshape %0 {shape = [40]} : (tensor<1x2x1x4x5xf32>) -> tensor<40xf32>
    %2 = graph.mul %1, %c : (tensor<40xf32>, tensor<40xf32>) -> tensor<40xf32>
    func.return %2 : tensor<40xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<1x2x1x5x4xf32>, %c: tensor<40xf32>) -> tensor<40xf32> {
    %0 = graph.transpose %x {perm = [0, 1, 2, 4, 3]} : (tensor<1x2x1x5x4xf32>) -> tensor<1x2x1x4x5xf32>
    %1 = graph.reshape %0 {shape = [40]} : (tensor<1x2x1x4x5xf32>) -> tensor<40xf32>
    %2 = graph.mul %1, %c : (tensor<40xf32>, tensor<40xf32>) -> tensor<40xf32>
    func.return %2 : tensor<40xf32>
  }
}
// -----
// RUN: fuse
// A named dim against a static one ([n] against 3: n may be 1 and broadcast, or 3) is left to the op's own
// kernel, which tells the two apart at run time: the add and the relu after it stay apart, while the mul of two
// [n]x3 tensors and its tanh fuse.
module {
  func.func @main(%x: tensor<[n]x3xf32>, %y: tensor<3x3xf32>, %z: tensor<[n]x3xf32>) -> (tensor<3x3xf32>, tensor<[n]x3xf32>) {
    %0 = graph.exp %x : (tensor<[n]x3xf32>) -> tensor<[n]x3xf32>
    %1 = graph.add %0, %y : (tensor<[n]x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %2 = graph.relu %1 : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %3 = graph.mul %0, %z : (tensor<[n]x3xf32>, tensor<[n]x3xf32>) -> tensor<[n]x3xf32>
    %4 = graph.tanh %3 : (tensor<[n]x3xf32>) -> tensor<[n]x3xf32>
    func.return %2, %4 : tensor<3x3xf32>, tensor<[n]x3xf32>
  }
}
// EXPECTED:
module {
  func.func @main(%x: tensor<[n]x3xf32>, %y: tensor<3x3xf32>, %z: tensor<[n]x3xf32>) -> (tensor<3x3xf32>, tensor<[n]x3xf32>) {
    %0 = graph.exp %x : (tensor<[n]x3xf32>) -> tensor<[n]x3xf32>
    %1 = graph.add %0, %y : (tensor<[n]x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
    %2 = graph.relu %1 : (tensor<3x3xf32>) -> tensor<3x3xf32>
    %3 = graph.fused %0, %z (
      {
      ^bb0(%arg0: tensor<[n]x3xf32>, %arg1: tensor<[n]x3xf32>):
        %4 = graph.mul %arg0, %arg1 : (tensor<[n]x3xf32>, tensor<[n]x3xf32>) -> tensor<[n]x3xf32>
        %5 = graph.tanh %4 : (tensor<[n]x3xf32>) -> tensor<[n]x3xf32>
        graph.yield %5 : (tensor<[n]x3xf32>) -> ()
      }
    ) : (tensor<[n]x3xf32>, tensor<[n]x3xf32>) -> tensor<[n]x3xf32>
    func.return %2, %3 : tensor<3x3xf32>, tensor<[n]x3xf32>
  }
}
