// the case running now
// pipeline: pack-quant-gpu,canonicalize,fuse,dce,pack-quant-gpu,lower-to-loops{schedule=true}
// seed: 903829492
// backends: interp,cpu
// opt-level: 1
// specials: yes
// schedule-seed: 2038637518
module {
  func.func @main(%x0: tensor<3xf32>, %x1: tensor<1xf32>) -> (tensor<1x3x1x4xf32>, tensor<3xf32>, tensor<1xf32>, tensor<1x1xf32>) {
    %0 = graph.constant {value = dense<-0.480191707611084> : tensor<1x1xf32>} : () -> tensor<1x1xf32>
    %1 = graph.matmul %0, %0 {transpose_a = true} : (tensor<1x1xf32>, tensor<1x1xf32>) -> tensor<1x1xf32>
    %2 = graph.constant {value = dense<0.07603489607572556> : tensor<f32>} : () -> tensor<f32>
    %3 = graph.sub %x0, %2 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    %4 = graph.abs %x0 : (tensor<3xf32>) -> tensor<3xf32>
    %5 = graph.constant {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
    %6 = graph.add %4, %5 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    %7 = graph.mod %3, %6 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %8 = graph.sigmoid %4 : (tensor<3xf32>) -> tensor<3xf32>
    %9 = graph.constant {value = dense<0> : tensor<i32>} : () -> tensor<i32>
    %10 = graph.embedding %0, %9 : (tensor<1x1xf32>, tensor<i32>) -> tensor<1xf32>
    %11 = graph.constant {value = dense<-0.8933709859848022> : tensor<f32>} : () -> tensor<f32>
    %12 = graph.eq %6, %11 : (tensor<3xf32>, tensor<f32>) -> tensor<3xi1>
    %13 = graph.where %12, %6, %11 : (tensor<3xi1>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    %14 = graph.constant {value = dense<512.0> : tensor<f32>} : () -> tensor<f32>
    %15 = graph.mul %x0, %14 : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
    %16 = graph.cast %15 {dtype = i9} : (tensor<3xf32>) -> tensor<3xi9>
    %17 = graph.constant {value = dense<-255> : tensor<i9>} : () -> tensor<i9>
    %18 = graph.min %16, %17 : (tensor<3xi9>, tensor<i9>) -> tensor<3xi9>
    %19 = graph.constant {value = dense<[[-0.08852270990610123], [0.9540490508079529], [0.6076127886772156], [-0.49955907464027405], [-0.4620895981788635]]> : tensor<5x1xf32>} : () -> tensor<5x1xf32>
    %20 = graph.constant {value = dense<[[-0.6539206504821777], [0.7546455264091492], [-0.8343567848205566], [0.05462046340107918], [-0.3663868308067322]]> : tensor<5x1xf32>} : () -> tensor<5x1xf32>
    %21 = graph.matmul %1, %19 {transpose_b = true} : (tensor<1x1xf32>, tensor<5x1xf32>) -> tensor<1x5xf32>
    %22 = graph.constant {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %23 = graph.mul %21, %22 : (tensor<1x5xf32>, tensor<f32>) -> tensor<1x5xf32>
    %24 = graph.constant {value = dense<-inf> : tensor<f32>} : () -> tensor<f32>
    %25 = graph.constant {value = dense<[[true, false, false, false, false]]> : tensor<1x5xi1>} : () -> tensor<1x5xi1>
    %26 = graph.where %25, %23, %24 : (tensor<1x5xi1>, tensor<1x5xf32>, tensor<f32>) -> tensor<1x5xf32>
    %27 = graph.softmax %26 : (tensor<1x5xf32>) -> tensor<1x5xf32>
    %28 = graph.matmul %27, %20 : (tensor<1x5xf32>, tensor<5x1xf32>) -> tensor<1x1xf32>
    %29 = graph.constant {value = dense<[[-0.6539206504821777], [0.7546455264091492], [-0.8343567848205566], [0.05462046340107918], [-0.3663868308067322]]> : tensor<5x1xf32>} : () -> tensor<5x1xf32>
    %30 = graph.arange {limit = 5.0, step = 2.0, dtype = f32} : () -> tensor<3xf32>
    %31 = graph.le %13, %30 : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
    %32 = graph.where %31, %13, %30 : (tensor<3xi1>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %33 = graph.reshape %13 {shape = [1, 1, 1, 3]} : (tensor<3xf32>) -> tensor<1x1x1x3xf32>
    %34 = graph.constant {value = dense<[[[[0.12581604719161987, -0.21132051944732666, -0.3927057087421417, 0.23406653106212616], [0.8239827752113342, 0.7645348310470581, 0.22714649140834808, -0.37565404176712036], [0.0014945568982511759, -0.389997661113739, -0.2401222139596939, -0.7003239989280701]]], [[[0.6941747069358826, -0.9847435355186462, 0.4822975993156433, -0.15116368234157562], [-0.19168634712696075, 0.4723127782344818, -0.3041916787624359, -0.7417417168617249], [-0.9580190777778625, 0.4952562749385834, 0.007639068178832531, -0.8522618412971497]]], [[[-0.7040984630584717, 0.32691529393196106, -0.6355679035186768, 0.12616674602031708], [0.11966095864772797, -0.7625167369842529, 0.5435851216316223, -0.013699767179787159], [0.564313530921936, 0.9148344993591309, 0.6817398071289062, 0.08989419788122177]]]]> : tensor<3x1x3x4xf32>} : () -> tensor<3x1x3x4xf32>
    %35 = graph.conv2d %33, %34 {strides = [1, 2], padding = [2, 0, 2, 0], layout = "NHWC", kernel_layout = "HWIO"} : (tensor<1x1x1x3xf32>, tensor<3x1x3x4xf32>) -> tensor<1x3x1x4xf32>
    func.return %35, %8, %10, %28 : tensor<1x3x1x4xf32>, tensor<3xf32>, tensor<1xf32>, tensor<1x1xf32>
  }
}
