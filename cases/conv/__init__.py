"""The `conv.*` catalogue IDs, one module each: convolution built by hand vs the library kernels
(notes 001 "nn.Unfold", "ConvTranspose2d", "Pooling layer"; 004 "卷积", "Transposed Convolution",
"Dilated Convolution", "VGG", "equivariance").

Three hand-built forms, each checked against a float64 brute-force loop over kernel taps (the
definition, sharing no code with either variant) and timed against the library call:

* `im2col`: `F.unfold` copies every k×k patch into a column (k² × the input), then one GEMM;
* `transposed`: insert s−1 zeros between input pixels, pad d(k−1)−p, flip the kernel, run a
  stride-1 convolution (the notes' three steps);
* `dilated`: a kernel with d−1 zeros between taps, run as an ordinary convolution.

`shapes` checks the notes' shape arithmetic (output size, `padding='same'`, weight shapes, VGG-16,
equivariance) and `pooling` the pooling layers they describe. What the five share (tolerances,
input families, the float64 tap loop, the measured receptive field)
is `cases/_lib/conv.py`.
"""
