// im2col and col2im of the CPU reference library: the two data movements
// that turn a convolution into GEMMs (Note [Convolution as GEMM] in
// RefKernels.h). Rows of the column matrix are (channel, kernel offset)
// pairs, columns are grid positions. Each call threads over independent
// rows (im2col) or image planes (col2im), and the innermost loop runs along
// the last spatial dim, where the valid range of every row is computed once,
// so the copy has no per-element bounds test. The geometry is common/Conv.h's
// (shared with the CUDA library).
#include "kernels/common/Conv.h"
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

using Geometry = ConvGeometry;  // common/Conv.h

template <class T>
void im2col_typed(int threads, const refkTensor& col, const refkTensor& im, const Geometry& g) {
  const int64_t N = im.sizes[0], C = im.sizes[1];
  const int64_t* is = g.is;
  const T* I = static_cast<const T*>(im.data);
  T* O = static_cast<T*>(col.data);
  const int64_t rows = N * C * g.K;
  parallel_for(rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(g.L, 1)), threads, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / (C * g.K), ck = r % (C * g.K), c = ck / g.K, k = ck % g.K;
      int64_t kk[3];
      g.split(k, kk);
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
void col2im_typed(int threads, const refkTensor& im, const refkTensor& col, const Geometry& g) {
  const int64_t N = im.sizes[0], C = im.sizes[1];
  const int64_t* is = g.is;
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
                     int64_t kk[3];
                     g.split(k, kk);
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
  if (const char* e = check::conv_geometry(col, im, g)) return fail(refkErrorInvalidValue, std::string(op) + ": " + e);
  return refkSuccess;
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
      im2col_typed<typename decltype(tag)::type>(ctx->num_threads, *col, *im, g);
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
        col2im_typed<T>(ctx->num_threads, *im, *col, g);
        return refkSuccess;
      }
    });
  });
}
