module {
  func.func @matmul(%A: buffer<8x12xf32, global>, %B: buffer<12x8xf32, global>, %C: buffer<8x8xf32, global>) {
    %c0 = loop.const {value = 0, dtype = index} : () -> index
    %c1 = loop.const {value = 1, dtype = index} : () -> index
    %c4 = loop.const {value = 4, dtype = index} : () -> index
    %c12 = loop.const {value = 12, dtype = index} : () -> index
    %c2 = loop.const {value = 2, dtype = index} : () -> index
    %zero = loop.const {value = 0.0, dtype = f32} : () -> f32
    loop.for %c0, %c2, %c1 (
      {
      ^bb0(%by: index):
        loop.for %c0, %c2, %c1 (
          {
          ^bb0(%bx: index):
            %As = loop.alloc {type = buffer<4x4xf32, shared>} : () -> buffer<4x4xf32, shared>
            %Bs = loop.alloc {type = buffer<4x4xf32, shared>} : () -> buffer<4x4xf32, shared>
            loop.for %c0, %c4, %c1 (
              {
              ^bb0(%ty: index):
                loop.for %c0, %c4, %c1 (
                  {
                  ^bb0(%tx: index):
                    %0 = loop.mul %by, %c4 : (index, index) -> index
                    %row = loop.add %0, %ty : (index, index) -> index
                    %1 = loop.mul %bx, %c4 : (index, index) -> index
                    %col = loop.add %1, %tx : (index, index) -> index
                    %acc = loop.alloc {type = buffer<f32, local>} : () -> buffer<f32, local>
                    loop.store %zero, %acc : (f32, buffer<f32, local>) -> ()
                    loop.for %c0, %c12, %c4 (
                      {
                      ^bb0(%k0: index):
                        %ka = loop.add %k0, %tx : (index, index) -> index
                        %2 = loop.load %A, %row, %ka : (buffer<8x12xf32, global>, index, index) -> f32
                        loop.store %2, %As, %ty, %tx : (f32, buffer<4x4xf32, shared>, index, index) -> ()
                        %kb = loop.add %k0, %ty : (index, index) -> index
                        %3 = loop.load %B, %kb, %col : (buffer<12x8xf32, global>, index, index) -> f32
                        loop.store %3, %Bs, %ty, %tx : (f32, buffer<4x4xf32, shared>, index, index) -> ()
                        loop.barrier : () -> ()
                        loop.for %c0, %c4, %c1 (
                          {
                          ^bb0(%k: index):
                            %4 = loop.load %As, %ty, %k : (buffer<4x4xf32, shared>, index, index) -> f32
                            %5 = loop.load %Bs, %k, %tx : (buffer<4x4xf32, shared>, index, index) -> f32
                            %6 = loop.load %acc : (buffer<f32, local>) -> f32
                            %7 = loop.fma %4, %5, %6 : (f32, f32, f32) -> f32
                            loop.store %7, %acc : (f32, buffer<f32, local>) -> ()
                            loop.yield : () -> ()
                          }
                        ) {kind = "unroll"} : (index, index, index) -> ()
                        loop.barrier : () -> ()
                        loop.yield : () -> ()
                      }
                    ) : (index, index, index) -> ()
                    %8 = loop.load %acc : (buffer<f32, local>) -> f32
                    loop.store %8, %C, %row, %col : (f32, buffer<8x8xf32, global>, index, index) -> ()
                    loop.yield : () -> ()
                  }
                ) {kind = "gpu_thread", axis = 0} : (index, index, index) -> ()
                loop.yield : () -> ()
              }
            ) {kind = "gpu_thread", axis = 1} : (index, index, index) -> ()
            loop.yield : () -> ()
          }
        ) {kind = "gpu_block", axis = 0} : (index, index, index) -> ()
        loop.yield : () -> ()
      }
    ) {kind = "gpu_block", axis = 1} : (index, index, index) -> ()
    func.return
  }
}
