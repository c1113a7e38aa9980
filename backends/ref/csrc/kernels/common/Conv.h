// The geometry of im2col and col2im (Note [Convolution as GEMM] in
// RefKernels.h), written once for every device (Note [One definition per
// semantics] in Dtypes.h): the spatial dims padded to three, how a column
// row's kernel offset splits per dim, which grid positions of a kernel
// offset read the image, and the geometry check. The CPU library threads
// over column rows and image planes, the CUDA library runs a thread per
// column entry (im2col) or image element (col2im).
#pragma once

#include "kernels/common/Descriptors.h"

namespace refk {

// Spatial geometry, padded to 3 dims (leading dims of size 1).
struct ConvGeometry {
  int64_t img[3], grid[3], kernel[3], stride[3], pad[3], dil[3];
  int64_t K = 1, L = 1;  // kernel offsets, grid positions
  // Strides of the image's spatial dims, padded likewise (elements).
  int64_t is[3];

  ConvGeometry(const refkConvGeometry& g, const refkTensor& im) {
    const int off = 3 - g.spatial;
    for (int d = 0; d < 3; ++d) {
      const int s = d - off;
      const bool real = s >= 0;
      img[d] = real ? im.sizes[2 + s] : 1;
      grid[d] = real ? g.grid[s] : 1;
      kernel[d] = real ? g.kernel[s] : 1;
      stride[d] = real ? g.stride[s] : 1;
      pad[d] = real ? g.padding[s] : 0;
      dil[d] = real ? g.dilation[s] : 1;
      is[d] = real ? im.strides[2 + s] : 0;
      K *= kernel[d];
      L *= grid[d];
    }
  }

  // Kernel offset k (row-major over the kernel dims) per dim.
  REFK_HOST_DEVICE void split(int64_t k, int64_t (&kk)[3]) const {
    kk[0] = k / (kernel[1] * kernel[2]);
    kk[1] = (k / kernel[2]) % kernel[1];
    kk[2] = k % kernel[2];
  }

  // Grid positions o in [0, grid) whose image coordinate
  // o * stride - pad + k * dil lies in [0, img).
  REFK_HOST_DEVICE void valid(int d, int64_t k, int64_t& lo, int64_t& hi) const {
    const int64_t shift = k * dil[d] - pad[d];  // image coordinate of o = 0
    lo = shift >= 0 ? 0 : (-shift + stride[d] - 1) / stride[d];
    hi = img[d] - shift <= 0 ? 0 : (img[d] - shift - 1) / stride[d] + 1;
    hi = hi < grid[d] ? hi : grid[d];
    lo = lo < hi ? lo : hi;
  }

  // The grid position along dim d that reads image coordinate i at kernel
  // offset k, or -1 when none does.
  REFK_HOST_DEVICE int64_t reader(int d, int64_t i, int64_t k) const {
    const int64_t t = i + pad[d] - k * dil[d];
    if (t < 0 || t % stride[d] != 0) return -1;
    const int64_t o = t / stride[d];
    return o < grid[d] ? o : -1;
  }
};

namespace check {

inline const char* conv_geometry(const refkTensor& col, const refkTensor& im, const refkConvGeometry& g) {
  bool ok = g.spatial >= 1 && g.spatial <= 3 && im.ndim == 2 + g.spatial && col.ndim == 3 && col.dtype == im.dtype &&
            col.sizes[0] == im.sizes[0];
  int64_t K = 1, L = 1;
  for (int d = 0; ok && d < g.spatial; ++d) {
    ok = g.kernel[d] >= 1 && g.stride[d] >= 1 && g.dilation[d] >= 1 && g.padding[d] >= 0 && g.grid[d] >= 0;
    K *= g.kernel[d];
    L *= g.grid[d];
  }
  ok = ok && col.sizes[1] == im.sizes[1] * K && col.sizes[2] == L;
  return ok ? nullptr : "inconsistent geometry";
}

}  // namespace check
}  // namespace refk
