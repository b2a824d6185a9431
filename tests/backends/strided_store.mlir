module {
  func.func @strided(%x: buffer<[n]xf32, global>, %step: index) {
    %c0 = loop.const {value = 0, dtype = index} : () -> index
    %one = loop.const {value = 1.0, dtype = f32} : () -> f32
    %n = loop.dim %x {axis = 0} : (buffer<[n]xf32, global>) -> index
    loop.for %c0, %n, %step (
      {
      ^bb0(%i: index):
        loop.store %one, %x, %i : (f32, buffer<[n]xf32, global>, index) -> ()
        loop.yield : () -> ()
      }
    ) {kind = "parallel"} : (index, index, index) -> ()
    func.return
  }
}
