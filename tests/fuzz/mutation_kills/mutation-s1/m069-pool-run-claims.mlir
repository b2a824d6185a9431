// kills: cosmic-ray mutant m069, core/NumberReplacer at tensorium/backends/llvm/pool.py:147 (_run_claims)
// change: -        b.cbranch(b.icmp_unsigned("==", b.lshr(word, I64(32)), epoch), check, done); +        b.cbranch(b.icmp_unsigned("==", b.lshr(word, I64( 31)), epoch), check, done)
// pipeline: fold-batch-norm
// seed: 1788089691
// backends: interp,cpu,webgpu
// opt-level: 2
// schedule-seed: 1231901276
module {
  func.func @main(%x0: tensor<3x4x1xf32>, %x1: tensor<1x2x3x30xf32>) -> (tensor<1x2x3x3xf32>, tensor<30x2xf32>, tensor<1x2x3x14xi1>, tensor<1x2x3x11xi1>, tensor<1x4x1xi64>, tensor<1x2x1x1x3x5xi1>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>) {
    %0 = graph.constant {value = dense<-0.09010615199804306> : tensor<f32>} : () -> tensor<f32>
    %1 = graph.tanh %0 : (tensor<f32>) -> tensor<f32>
    %2 = graph.einsum %x1, %1 {equation = "abcd,->db"} : (tensor<1x2x3x30xf32>, tensor<f32>) -> tensor<30x2xf32>
    %3 = graph.cos %x0 : (tensor<3x4x1xf32>) -> tensor<3x4x1xf32>
    %4 = graph.broadcast_to %3 {shape = [-1, 4, -1]} : (tensor<3x4x1xf32>) -> tensor<3x4x1xf32>
    %5 = graph.constant {value = dense<[[[[9, 0, 1, -9, 17, 27, -19, 7, -15, 24, -17], [18, 25, -28, 16, 23, 26, 1, -17, -21, 5, -11], [0, -15, -6, 1, 22, 23, 10, 9, 5, 19, 11]]]]> : tensor<1x1x3x11xi32>} : () -> tensor<1x1x3x11xi32>
    %6 = graph.constant {value = dense<[[[[0.7369245290756226, -0.4427424967288971, -0.7541399002075195, -0.8098422288894653, -0.010895123705267906, -0.6732330322265625, 0.7924671173095703, -0.00914215948432684, 0.9597554802894592, -0.4316380023956299, 0.7381262183189392], [-0.7558594942092896, 0.06112441420555115, 0.2123066633939743, -0.753733217716217, 0.10320065915584564, 0.34076017141342163, -0.349419504404068, 0.014899075031280518, -0.9648568034172058, 0.6114766001701355, 0.6897738575935364], [0.6623253226280212, -0.6039671301841736, 0.3253398537635803, 0.8119273781776428, 0.12232360243797302, 0.6071775555610657, -0.48862048983573914, -0.711948573589325, 0.1342369019985199, 0.3991154134273529, 0.10873571783304214]]]]> : tensor<1x1x3x11xf32>} : () -> tensor<1x1x3x11xf32>
    %7 = graph.scatter_elements %x1, %5, %6 {axis = 3} : (tensor<1x2x3x30xf32>, tensor<1x1x3x11xi32>, tensor<1x1x3x11xf32>) -> tensor<1x2x3x30xf32>
    %8 = graph.gt %7, %x1 : (tensor<1x2x3x30xf32>, tensor<1x2x3x30xf32>) -> tensor<1x2x3x30xi1>
    %9 = graph.not %8 : (tensor<1x2x3x30xi1>) -> tensor<1x2x3x30xi1>
    %10:3 = graph.split %9 {axis = 3, sizes = [14, 11, 5]} : (tensor<1x2x3x30xi1>) -> (tensor<1x2x3x14xi1>, tensor<1x2x3x11xi1>, tensor<1x2x3x5xi1>)
    %11 = graph.argmax %4 {axis = 0, keepdims = true, select_last_index = true} : (tensor<3x4x1xf32>) -> tensor<1x4x1xi64>
    %12 = graph.unsqueeze %10#2 {axes = [2, 3]} : (tensor<1x2x3x5xi1>) -> tensor<1x2x1x1x3x5xi1>
    %13 = graph.constant {value = dense<"0xBEE6383FAB9533BF3EFF1F3F2858123FB5EFF53D203DB3BE6B6407BFDF2462BF8DEB47BD5902113F0ECD22BFD6B2D93CDEF96DBF1F43373F20DB493CC1CA043F52CE16BEBBAE77BF0AB1513F731B51BE08A87E3D06E55CBEA79E893EF49DDEBEAFA699BEA81C003E09864F3FA0C1463FD533E83EC3D2E8BE973C313D0DD33F3F3410153F735703BFAEB760BEAA9E133D0F49453F79BB2A3E553A4F3F970A433F03070F3EE8312DBDDF65C53E59DFA5BE0FB688BEF931903DC749EFBEC55A1A3F4F5EA63EF74242BF8278163FB5D4D7BDFF910E3F97CDAA3EE093013ECD3349BF29F16D3F9A45A3BED5BC7F3E78416D3E7ABF2BBFA89EA7BED7B9D3BED251DA3E2BC278BEE9171F3FB311D53E7EBB47BFE56BC2BE6A331A3F549C093FA4D4ABBD5DB56F3FA41171BF84E83EBD1CE0753E3064C6BD6BCC44BC2CAA933E0EB0ADBEBD4627BD05A8513EFE099BBEE5DE62BDE38575BF8D58F63E08ED0ABFD4A0043FCD96513E997F6EBE"> : tensor<3x30xf32>} : () -> tensor<3x30xf32>
    %14 = graph.matmul %7, %13 {transpose_b = true} : (tensor<1x2x3x30xf32>, tensor<3x30xf32>) -> tensor<1x2x3x3xf32>
    %15 = graph.constant {value = dense<[-0.11948744207620621, 0.9130725264549255, -0.6428188681602478]> : tensor<3xf32>} : () -> tensor<3xf32>
    %16 = graph.add %14, %15 : (tensor<1x2x3x3xf32>, tensor<3xf32>) -> tensor<1x2x3x3xf32>
    %17 = graph.constant {value = dense<"0x1CF5BDBD904705BF69A030BF3C084B3F339FD8BD34385C3F4B4CB73E88450DBE34755B3E37DD21BD9835463F93F4BCBE31486D3FC2212ABF5927D2BE60294A3FB4DB3FBF397C7DBB0807D2BE1C15563EAE43A0BE5B881EBFA187013FAF403F3FCA13FC3D6D67A03D6AA3E4BEA0E3F53E6DCA56BE0C4CD43E78A2693F3FDCC3BE252072BF083567BFAB76DEBEBB5474BFB96806BF382B58BF3D045BBE430F69BFE0A7733FB114CC3ED08193BD8A427D3FF4302A3E29ABF1BE2830003F7A95FEBEC30A99BC131B2FBF0250923E35EF2F3EE182FABE33C425BFBAB5D3BE9B0D173F02792B3F83E3F2BE2AAB1CBEE926493E247F82BE5790513F1717E0BDE9F88BBDE54FD93E5E4F3ABE39F9B53E96C9AEBE4533033F9C406E3F870706BE4FF1BBBEA1EB3CBE06D4C2BE26EA94BE66EEF5BE4E757DBFBFC4F1BE58F2483FC176443ECF06AFBED78331BFF84557BFDA5DFC3D6045223F482E343FD51340BFEE4180BDA71D00BF2AB2A93D"> : tensor<3x30xf32>} : () -> tensor<3x30xf32>
    %18 = graph.matmul %7, %17 {transpose_b = true} : (tensor<1x2x3x30xf32>, tensor<3x30xf32>) -> tensor<1x2x3x3xf32>
    %19 = graph.constant {value = dense<[0.6449829936027527, 0.23725168406963348, -0.738269031047821]> : tensor<3xf32>} : () -> tensor<3xf32>
    %20 = graph.add %18, %19 : (tensor<1x2x3x3xf32>, tensor<3xf32>) -> tensor<1x2x3x3xf32>
    %21 = graph.constant {value = dense<[[[[-2, 0, 2, 1, 1, -3, 1, 2, -3, 0, 2, -3, 1, 2, 2, 1, -3, 1, 2, 1]]]]> : tensor<1x1x1x20xi64>} : () -> tensor<1x1x1x20xi64>
    %22 = graph.constant {value = dense<[[[[false, false, true, true, true, true, false, true, false, false, true, false, true, false, true, false, false, false, true, true]]]]> : tensor<1x1x1x20xi1>} : () -> tensor<1x1x1x20xi1>
    %23 = graph.scatter_elements %9, %21, %22 {axis = 2} : (tensor<1x2x3x30xi1>, tensor<1x1x1x20xi64>, tensor<1x1x1x20xi1>) -> tensor<1x2x3x30xi1>
    %24 = graph.constant {value = dense<[0.20015518367290497, -0.2508136034011841, 0.9122344851493835]> : tensor<3xf32>} : () -> tensor<3xf32>
    %25 = graph.rms_norm %14, %24 : (tensor<1x2x3x3xf32>, tensor<3xf32>) -> tensor<1x2x3x3xf32>
    %26 = graph.relu %16 : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
    func.return %26, %2, %10#0, %10#1, %11, %12, %20, %25 : tensor<1x2x3x3xf32>, tensor<30x2xf32>, tensor<1x2x3x14xi1>, tensor<1x2x3x11xi1>, tensor<1x4x1xi64>, tensor<1x2x1x1x3x5xi1>, tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>
  }
}
