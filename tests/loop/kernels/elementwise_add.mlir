module {
  func.func @add(%a: buffer<[n]xf32, global>, %b: buffer<[n]xf32, global>, %c: buffer<[n]xf32, global>) {
    %c0 = loop.const {value = 0, dtype = index} : () -> index
    %c1 = loop.const {value = 1, dtype = index} : () -> index
    %n = loop.dim %a {axis = 0} : (buffer<[n]xf32, global>) -> index
    loop.for %c0, %n, %c1 (
      {
      ^bb0(%i: index):
        %x = loop.load %a, %i : (buffer<[n]xf32, global>, index) -> f32
        %y = loop.load %b, %i : (buffer<[n]xf32, global>, index) -> f32
        %s = loop.add %x, %y : (f32, f32) -> f32
        loop.store %s, %c, %i : (f32, buffer<[n]xf32, global>, index) -> ()
        loop.yield : () -> ()
      }
    ) {kind = "parallel"} : (index, index, index) -> ()
    func.return
  }
}
