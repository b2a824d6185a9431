// bug: fold-batch-norm folded a batch norm with an infinite mean into the convolution's bias, changing which
// elements end up NaN; folds whose weights or bias would not be finite are refused now (found with special-value
// constants)
// pipeline: fold-batch-norm
// seed: 1091
// backends: interp,cpu
// opt-level: 1
// specials: yes
module {
  func.func @main(%x0: tensor<2x3x2x1xf32>, %cut11_0: tensor<1xf32>) -> tensor<2x3x1x1xf32> {
    %0 = graph.avg_pool2d %x0 {kernel = [2, 1], strides = [1, 3], padding = [1, 0, 1, 0], ceil_mode = true} : (tensor<2x3x2x1xf32>) -> tensor<2x3x3x1xf32>
    %1 = graph.constant {value = dense<[[[[0.9506766200065613, -0.8078102469444275, 0.88112473487854], [-0.6844456791877747, 0.4064774513244629, 0.5488022565841675]], [[0.17768137156963348, 0.4447205662727356, 0.6731462478637695], [-0.9261196851730347, -0.5222345590591431, 0.665948212146759]], [[-0.8396958112716675, -0.450558602809906, -0.05851433426141739], [-0.7931461334228516, -0.9222608804702759, -0.008730433881282806]]], [[[0.6856353282928467, 0.949779212474823, -0.6959415674209595], [-0.08750155568122864, 0.3886374235153198, -0.7445538640022278]], [[0.38581833243370056, -0.8479477763175964, 0.05217445641756058], [0.4923059642314911, 0.655247688293457, 0.3110063076019287]], [[-0.5705035924911499, -0.9592133164405823, 0.6620321869850159], [-0.08233695477247238, -0.1351255625486374, 0.4632267355918884]]], [[[-0.34409287571907043, -0.4659419059753418, 0.09922874718904495], [0.4792983829975128, -0.07597000896930695, 0.2680506110191345]], [[-0.3743084967136383, -0.1303216516971588, -0.650402843952179], [-0.9129859209060669, 0.22488658130168915, -0.5025745034217834]], [[-0.4658593237400055, 0.8575842976570129, 0.40691760182380676], [-0.9194324016571045, 0.9650992155075073, 0.6804789900779724]]]]> : tensor<3x3x2x3xf32>} : () -> tensor<3x3x2x3xf32>
    %2 = graph.conv2d %0, %1 {strides = [2, 1], padding = [1, 2, 0, 0], dilations = [1, 2], kernel_layout = "OHWI"} : (tensor<2x3x3x1xf32>, tensor<3x3x2x3xf32>) -> tensor<2x3x1x1xf32>
    %3 = graph.constant {value = dense<[-0.7133169770240784, 0.43852871656417847, 0.1578974574804306]> : tensor<3xf32>} : () -> tensor<3xf32>
    %4 = graph.constant {value = dense<[-0.12012859433889389, -0.7658733129501343, 0.34295371174812317]> : tensor<3xf32>} : () -> tensor<3xf32>
    %5 = graph.constant {value = dense<[-inf, -0.42446285486221313, 0.5015806555747986]> : tensor<3xf32>} : () -> tensor<3xf32>
    %6 = graph.constant {value = dense<[0.9714145660400391, 0.10348842293024063, 0.7012007832527161]> : tensor<3xf32>} : () -> tensor<3xf32>
    %7 = graph.batch_norm %2, %3, %4, %5, %6 {eps = 0.001} : (tensor<2x3x1x1xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x1x1xf32>
    %8 = graph.mod %7, %cut11_0 : (tensor<2x3x1x1xf32>, tensor<1xf32>) -> tensor<2x3x1x1xf32>
    func.return %8 : tensor<2x3x1x1xf32>
  }
}

