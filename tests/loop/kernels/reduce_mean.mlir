module {
  func.func @row_mean(%x: buffer<[m]x[n]xf32, global>, %y: buffer<[m]xf32, global>) {
    %c0 = loop.const {value = 0, dtype = index} : () -> index
    %c1 = loop.const {value = 1, dtype = index} : () -> index
    %zero = loop.const {value = 0.0, dtype = f32} : () -> f32
    %m = loop.dim %x {axis = 0} : (buffer<[m]x[n]xf32, global>) -> index
    %n = loop.dim %x {axis = -1} : (buffer<[m]x[n]xf32, global>) -> index
    loop.for %c0, %m, %c1 (
      {
      ^bb0(%i: index):
        %acc = loop.alloc {type = buffer<f32, local>} : () -> buffer<f32, local>
        loop.store %zero, %acc : (f32, buffer<f32, local>) -> ()
        loop.for %c0, %n, %c1 (
          {
          ^bb0(%j: index):
            %0 = loop.load %acc : (buffer<f32, local>) -> f32
            %1 = loop.load %x, %i, %j : (buffer<[m]x[n]xf32, global>, index, index) -> f32
            %2 = loop.add %0, %1 : (f32, f32) -> f32
            loop.store %2, %acc : (f32, buffer<f32, local>) -> ()
            loop.yield : () -> ()
          }
        ) : (index, index, index) -> ()
        %total = loop.load %acc : (buffer<f32, local>) -> f32
        %count = loop.cast %n {dtype = f32} : (index) -> f32
        %3 = loop.div %total, %count : (f32, f32) -> f32
        loop.store %3, %y, %i : (f32, buffer<[m]xf32, global>, index) -> ()
        loop.yield : () -> ()
      }
    ) {kind = "parallel"} : (index, index, index) -> ()
    func.return
  }
}
