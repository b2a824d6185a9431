module {
  func.func @matvec_int4(%w: buffer<[rows]x4xu8, global>, %scale: buffer<[rows]xf32, global>, %x: buffer<8xf32, global>, %y: buffer<[rows]xf32, global>) {
    %c0 = loop.const {value = 0, dtype = index} : () -> index
    %c1 = loop.const {value = 1, dtype = index} : () -> index
    %c8 = loop.const {value = 8, dtype = index} : () -> index
    %zero = loop.const {value = 0.0, dtype = f32} : () -> f32
    %rows = loop.dim %w {axis = 0} : (buffer<[rows]x4xu8, global>) -> index
    loop.for %c0, %rows, %c1 (
      {
      ^bb0(%r: index):
        %acc = loop.alloc {type = buffer<f32, local>} : () -> buffer<f32, local>
        loop.store %zero, %acc : (f32, buffer<f32, local>) -> ()
        loop.for %c0, %c8, %c1 (
          {
          ^bb0(%e: index):
            %q = loop.load_packed %w, %r, %e {bits = 4, signed = true} : (buffer<[rows]x4xu8, global>, index, index) -> i32
            %qf = loop.cast %q {dtype = f32} : (i32) -> f32
            %0 = loop.load %x, %e : (buffer<8xf32, global>, index) -> f32
            %1 = loop.load %acc : (buffer<f32, local>) -> f32
            %2 = loop.fma %qf, %0, %1 : (f32, f32, f32) -> f32
            loop.store %2, %acc : (f32, buffer<f32, local>) -> ()
            loop.yield : () -> ()
          }
        ) {kind = "unroll", factor = 4} : (index, index, index) -> ()
        %3 = loop.load %acc : (buffer<f32, local>) -> f32
        %4 = loop.load %scale, %r : (buffer<[rows]xf32, global>, index) -> f32
        %5 = loop.mul %3, %4 : (f32, f32) -> f32
        loop.store %5, %y, %r : (f32, buffer<[rows]xf32, global>, index) -> ()
        loop.yield : () -> ()
      }
    ) {kind = "parallel"} : (index, index, index) -> ()
    func.return
  }
}
