// im2col and col2im of the CPU reference library: the two data movements
// that turn a convolution into GEMMs (Note [Convolution as GEMM] in
// RefKernels.h). Rows of the column matrix are (channel, kernel offset)
// pairs, columns are grid positions. Each call threads over independent
// rows (im2col) or image planes (col2im), and the innermost loop runs along
// the last spatial dim, where the valid range of every row is computed once,
// so the copy has no per-element bounds test.
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

// Spatial geometry, padded to 3 dims (leading dims of size 1).
struct Geometry {
  int64_t img[3], grid[3], kernel[3], stride[3], pad[3], dil[3];
  int64_t K = 1, L = 1;  // kernel offsets, grid positions
  explicit Geometry(const refkConvGeometry& g, const refkTensor& im) {
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
      K *= kernel[d];
      L *= grid[d];
    }
  }
  // Grid positions o in [0, grid) whose image coordinate o*stride - pad + k*dil lies in [0, img).
  void valid(int d, int64_t k, int64_t& lo, int64_t& hi) const {
    const int64_t shift = k * dil[d] - pad[d];  // image coordinate of o = 0
    lo = shift >= 0 ? 0 : (-shift + stride[d] - 1) / stride[d];
    hi = img[d] - shift <= 0 ? 0 : (img[d] - shift - 1) / stride[d] + 1;
    hi = std::min(hi, grid[d]);
    lo = std::min(lo, hi);
  }
};

void img_strides(const refkTensor& im, int spatial, int64_t (&s)[3]) {
  const int off = 3 - spatial;
  for (int d = 0; d < 3; ++d) s[d] = d >= off ? im.strides[2 + d - off] : 0;
}

template <class T>
void im2col_typed(int threads, const refkTensor& col, const refkTensor& im, const Geometry& g, int spatial) {
  const int64_t N = im.sizes[0], C = im.sizes[1];
  int64_t is[3];
  img_strides(im, spatial, is);
  const T* I = static_cast<const T*>(im.data);
  T* O = static_cast<T*>(col.data);
  const int64_t rows = N * C * g.K;
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(g.L, 1)), threads, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / (C * g.K), ck = r % (C * g.K), c = ck / g.K, k = ck % g.K;
      const int64_t kk[3] = {k / (g.kernel[1] * g.kernel[2]), (k / g.kernel[2]) % g.kernel[1], k % g.kernel[2]};
      const T* plane = I + n * im.strides[0] + c * im.strides[1];
      T* row = O + n * col.strides[0] + ck * col.strides[1];
      const int64_t cs = col.strides[2];
      int64_t lo[3], hi[3];
      for (int d = 0; d < 3; ++d) g.valid(d, kk[d], lo[d], hi[d]);
      for (int64_t o0 = 0; o0 < g.grid[0]; ++o0) {
        for (int64_t o1 = 0; o1 < g.grid[1]; ++o1) {
          T* out = row + ((o0 * g.grid[1] + o1) * g.grid[2]) * cs;
          const bool inside = o0 >= lo[0] && o0 < hi[0] && o1 >= lo[1] && o1 < hi[1];
          const int64_t a = inside ? lo[2] : g.grid[2], b = inside ? hi[2] : g.grid[2];
          for (int64_t o = 0; o < a; ++o) out[o * cs] = T{};
          if (inside) {
            const int64_t i0 = o0 * g.stride[0] - g.pad[0] + kk[0] * g.dil[0];
            const int64_t i1 = o1 * g.stride[1] - g.pad[1] + kk[1] * g.dil[1];
            const int64_t step = g.stride[2] * is[2];
            const T* in = plane + i0 * is[0] + i1 * is[1] + (kk[2] * g.dil[2] - g.pad[2]) * is[2];
            if (cs == 1 && step == 1) {
              for (int64_t o = a; o < b; ++o) out[o] = in[o];
            } else {
              for (int64_t o = a; o < b; ++o) out[o * cs] = in[o * step];
            }
          }
          for (int64_t o = b; o < g.grid[2]; ++o) out[o * cs] = T{};
        }
      }
    }
  });
}

// im = sum of the column entries that map to each image element (zero where
// none does); one (n, c) plane per thread at a time, kernel offsets in order,
// so the sums are deterministic. Half types add in float per offset and
// round per addition, as ATen's col2im adds in the dtype.
template <class T>
void col2im_typed(int threads, const refkTensor& im, const refkTensor& col, const Geometry& g, int spatial) {
  const int64_t N = im.sizes[0], C = im.sizes[1];
  int64_t is[3];
  img_strides(im, spatial, is);
  T* I = static_cast<T*>(im.data);
  const T* S = static_cast<const T*>(col.data);
  const int64_t plane_work = g.K * g.L;
  parallel_for(N * C, std::max<int64_t>(1, kGrain / std::max<int64_t>(plane_work, 1)), threads,
               [&](int64_t p0, int64_t p1) {
                 for (int64_t p = p0; p < p1; ++p) {
                   const int64_t n = p / C, c = p % C;
                   T* plane = I + n * im.strides[0] + c * im.strides[1];
                   for (int64_t i0 = 0; i0 < g.img[0]; ++i0) {
                     for (int64_t i1 = 0; i1 < g.img[1]; ++i1) {
                       T* line = plane + i0 * is[0] + i1 * is[1];
                       for (int64_t i2 = 0; i2 < g.img[2]; ++i2) line[i2 * is[2]] = T{};
                     }
                   }
                   for (int64_t k = 0; k < g.K; ++k) {
                     const int64_t kk[3] = {k / (g.kernel[1] * g.kernel[2]), (k / g.kernel[2]) % g.kernel[1],
                                            k % g.kernel[2]};
                     const T* row = S + n * col.strides[0] + (c * g.K + k) * col.strides[1];
                     const int64_t cs = col.strides[2];
                     int64_t lo[3], hi[3];
                     for (int d = 0; d < 3; ++d) g.valid(d, kk[d], lo[d], hi[d]);
                     const int64_t step = g.stride[2] * is[2];
                     for (int64_t o0 = lo[0]; o0 < hi[0]; ++o0) {
                       for (int64_t o1 = lo[1]; o1 < hi[1]; ++o1) {
                         const T* src = row + ((o0 * g.grid[1] + o1) * g.grid[2]) * cs;
                         const int64_t i0 = o0 * g.stride[0] - g.pad[0] + kk[0] * g.dil[0];
                         const int64_t i1 = o1 * g.stride[1] - g.pad[1] + kk[1] * g.dil[1];
                         T* dst = plane + i0 * is[0] + i1 * is[1] + (kk[2] * g.dil[2] - g.pad[2]) * is[2];
                         for (int64_t o = lo[2]; o < hi[2]; ++o) {
                           dst[o * step] = store<T>(load(dst[o * step]) + load(src[o * cs]));
                         }
                       }
                     }
                   }
                 }
               });
}

refkStatus check_geometry(const char* op, const refkTensor& col, const refkTensor& im, const refkConvGeometry& g) {
  bool ok = g.spatial >= 1 && g.spatial <= 3 && im.ndim == 2 + g.spatial && col.ndim == 3 && col.dtype == im.dtype &&
            col.sizes[0] == im.sizes[0];
  int64_t K = 1, L = 1;
  for (int d = 0; ok && d < g.spatial; ++d) {
    ok = g.kernel[d] >= 1 && g.stride[d] >= 1 && g.dilation[d] >= 1 && g.padding[d] >= 0 && g.grid[d] >= 0;
    K *= g.kernel[d];
    L *= g.grid[d];
  }
  ok = ok && col.sizes[1] == im.sizes[1] * K && col.sizes[2] == L;
  return ok ? refkSuccess : fail(refkErrorInvalidValue, std::string(op) + ": inconsistent geometry");
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkConvIm2col(const refkContext* ctx, const refkTensor* col, const refkTensor* im,
                                     const refkConvGeometry* geometry) {
  return guarded("im2col", [&] {
    if (const refkStatus s = check_geometry("im2col", *col, *im, *geometry); s != refkSuccess) return s;
    if (numel(*col) == 0) return refkSuccess;
    const Access access({col, im});
    const Geometry g(*geometry, *im);
    return dispatch(col->dtype, [&](auto tag) -> refkStatus {
      im2col_typed<typename decltype(tag)::type>(ctx->num_threads, *col, *im, g, geometry->spatial);
      return refkSuccess;
    });
  });
}

extern "C" refkStatus refkConvCol2im(const refkContext* ctx, const refkTensor* im, const refkTensor* col,
                                     const refkConvGeometry* geometry) {
  return guarded("conv col2im", [&] {
    if (const refkStatus s = check_geometry("col2im", *col, *im, *geometry); s != refkSuccess) return s;
    if (numel(*im) == 0) return refkSuccess;
    const Access access({col, im});
    const Geometry g(*geometry, *im);
    return dispatch(col->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        return unsupported("col2im", col->dtype);
      } else {
        col2im_typed<T>(ctx->num_threads, *im, *col, g, geometry->spatial);
        return refkSuccess;
      }
    });
  });
}
