// im2col and col2im of the CUDA reference library (Note [Convolution as
// GEMM] in RefKernels.h), on common/Conv.h's geometry (shared with the CPU
// library). im2col: a thread per column entry, reading its image element or
// writing zero. col2im: a thread per image element, gathering the column
// entries that read it in kernel-offset order and adding in the dtype, so
// every element sums the same terms in the same order as on the CPU device.
#include "kernels/common/Conv.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

using refk::ConvGeometry;

struct Layout {
  int64_t n, c;         // image strides of N and C
  int64_t cn, cr, cl;   // column strides of N, rows, positions
};

template <class T>
__global__ void im2col_kernel(ConvGeometry g, Layout y, int64_t N, int64_t C, T* col, const T* im) {
  const int64_t total = N * C * g.K * g.L;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t l = e % g.L, r = e / g.L;
    const int64_t ck = r % (C * g.K), n = r / (C * g.K), c = ck / g.K, k = ck % g.K;
    int64_t kk[3];
    g.split(k, kk);
    const int64_t o[3] = {l / (g.grid[1] * g.grid[2]), (l / g.grid[2]) % g.grid[1], l % g.grid[2]};
    int64_t off = n * y.n + c * y.c;
    bool inside = true;
    for (int d = 0; d < 3; ++d) {
      const int64_t i = o[d] * g.stride[d] - g.pad[d] + kk[d] * g.dil[d];
      inside = inside && i >= 0 && i < g.img[d];
      off += i * g.is[d];
    }
    col[n * y.cn + ck * y.cr + l * y.cl] = inside ? im[off] : T{};
  }
}

template <class T>
__global__ void col2im_kernel(ConvGeometry g, Layout y, int64_t N, int64_t C, T* im, const T* col) {
  const int64_t plane = g.img[0] * g.img[1] * g.img[2];
  const int64_t total = N * C * plane;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += stride) {
    const int64_t p = e % plane, nc = e / plane, n = nc / C, c = nc % C;
    const int64_t i[3] = {p / (g.img[1] * g.img[2]), (p / g.img[2]) % g.img[1], p % g.img[2]};
    T acc = store<T>(opmath_t<T>(0));
    for (int64_t k = 0; k < g.K; ++k) {
      int64_t kk[3];
      g.split(k, kk);
      int64_t l = 0;
      bool read = true;
      for (int d = 0; d < 3 && read; ++d) {
        const int64_t o = g.reader(d, i[d], kk[d]);
        read = o >= 0;
        l = l * g.grid[d] + o;
      }
      if (read) acc = store<T>(load(acc) + load(col[n * y.cn + (c * g.K + k) * y.cr + l * y.cl]));
    }
    im[n * y.n + c * y.c + i[0] * g.is[0] + i[1] * g.is[1] + i[2] * g.is[2]] = acc;
  }
}

Layout layout_of(const refkTensor& im, const refkTensor& col) {
  return Layout{im.strides[0], im.strides[1], col.strides[0], col.strides[1], col.strides[2]};
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkConvIm2col(const refkContext* ctx, const refkTensor* col, const refkTensor* im,
                                     const refkConvGeometry* geometry) {
  if (const char* e = refk::check::conv_geometry(*col, *im, *geometry)) {
    return fail(refkErrorInvalidValue, std::string("im2col: ") + e);
  }
  const int64_t total = numel(*col);
  if (total == 0) return refkSuccess;
  const ConvGeometry g(*geometry, *im);
  return dispatch(col->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    im2col_kernel<T><<<blocks_for(total), kBlockThreads, 0, stream_of(ctx)>>>(
        g, layout_of(*im, *col), im->sizes[0], im->sizes[1], static_cast<T*>(col->data),
        static_cast<const T*>(im->data));
    return launched("im2col");
  });
}

extern "C" refkStatus refkConvCol2im(const refkContext* ctx, const refkTensor* im, const refkTensor* col,
                                     const refkConvGeometry* geometry) {
  if (const char* e = refk::check::conv_geometry(*col, *im, *geometry)) {
    return fail(refkErrorInvalidValue, std::string("col2im: ") + e);
  }
  const int64_t total = numel(*im);
  if (total == 0) return refkSuccess;
  const ConvGeometry g(*geometry, *im);
  return dispatch(col->dtype, [&](auto tag) -> refkStatus {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, bool>) {
      return unsupported("col2im", col->dtype);
    } else {
      col2im_kernel<T><<<blocks_for(total), kBlockThreads, 0, stream_of(ctx)>>>(
          g, layout_of(*im, *col), im->sizes[0], im->sizes[1], static_cast<T*>(im->data),
          static_cast<const T*>(col->data));
      return launched("col2im");
    }
  });
}
