// Padding and resampling of the CPU reference library: reflection and
// replication padding, nearest and (bi/tri)linear upsampling, grid_sampler_2d
// and col2im. Padding and upsampling are gathers over the index space of
// Spatial.h with per-dim source tables computed once per call (the
// arithmetic that decides which input an output reads lives in one place
// per mode); the rows then only look up tables. Every output element is
// written by exactly one thread, so results never depend on threading.
#include "kernels/cpu/Common.h"
#include "kernels/cpu/Spatial.h"

#include <vector>

namespace refk {
namespace {

// A storage type of the same size, for ops that only move elements.
template <class F>
refkStatus by_size(refkDtype d, F&& f) {
  switch (itemsize(d)) {
    case 1: return f(Tag<uint8_t>{});
    case 2: return f(Tag<uint16_t>{});
    case 4: return f(Tag<uint32_t>{});
    case 8: return f(Tag<uint64_t>{});
  }
  return unsupported("refkPad", d);
}

// Runs row(plane offsets, o0, o1) over every (plane, o0, o1) of side A, threaded.
template <class Row>
void for_rows(int threads, const Spatial& s, Row&& row) {
  const int64_t rows = s.planes * s.a[0] * s.a[1];
  const int64_t per_row = std::max<int64_t>(1, s.a[2] * s.lanes);
  parallel_for(rows, std::max<int64_t>(1, kGrain / per_row), threads, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t p = r / (s.a[0] * s.a[1]), o0 = r / s.a[1] % s.a[0], o1 = r % s.a[1];
      int64_t off[3];
      s.plane_offsets(p, off);
      row(off, o0, o1);
    }
  });
}

// ---- padding ----------------------------------------------------------------------

template <class T>
void pad_typed(int threads, const Spatial& s, T* out, const T* in, const std::vector<int64_t> (&src)[3]) {
  for_rows(threads, s, [&](const int64_t* off, int64_t o0, int64_t o1) {
    T* o = out + off[0] + o0 * s.st[0][0] + o1 * s.st[0][1];
    const T* i = in + off[1] + src[0][o0] * s.st[1][0] + src[1][o1] * s.st[1][1];
    const int64_t* s2 = src[2].data();
    if (s.lanes == 1) {
      for (int64_t k = 0; k < s.a[2]; ++k) o[k * s.st[0][2]] = i[s2[k] * s.st[1][2]];
      return;
    }
    for (int64_t k = 0; k < s.a[2]; ++k) {
      T* ok = o + k * s.st[0][2];
      const T* ik = i + s2[k] * s.st[1][2];
      for (int64_t c = 0; c < s.lanes; ++c) ok[c * s.lane_st[0]] = ik[c * s.lane_st[1]];
    }
  });
}

// The source index of every output position per dim (A = out, B = in);
// false when the padding reaches past the input.
bool pad_tables(refkPadMode mode, const Spatial& s, int nspatial, const int64_t* before,
                std::vector<int64_t> (&src)[3]) {
  for (int d = 0; d < 3; ++d) {
    const int i = d - (3 - nspatial);
    const int64_t n = s.b[d];
    for (int64_t o = 0; o < s.a[d]; ++o) {
      int64_t x = i < 0 ? o : o - before[i];
      if (mode == refkPadReflect) {
        if (x < 0) x = -x;
        if (x >= n) x = 2 * (n - 1) - x;
      } else {
        x = std::min(std::max<int64_t>(x, 0), n - 1);
      }
      if (x < 0 || x >= n) return false;
      src[d].push_back(x);
    }
  }
  return true;
}

// Gradients of gathers (side A = grad_out, side B = grad_in, no lane): per
// plane, taps(o0, o1, o2, add) calls add(flat input index, weight) for what
// output position o read; grad_out's value times the weight is added into a
// plane buffer (opmath_t) in output order, which then becomes grad_in's plane.
// round_each rounds every sum to T (half types summed in themselves).
template <class T, class Taps>
void scatter_planes(int threads, const Spatial& s, T* gin, const T* gout, bool round_each, Taps&& taps) {
  using M = opmath_t<T>;
  const int64_t na = s.a_numel(), nb = s.b_numel();
  parallel_for(s.planes, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, na + nb)), threads,
               [&](int64_t begin, int64_t end) {
    std::vector<M> acc(static_cast<size_t>(nb));
    for (int64_t p = begin; p < end; ++p) {
      int64_t off[3];
      s.plane_offsets(p, off);
      std::fill(acc.begin(), acc.end(), M(0));
      for (int64_t o0 = 0; o0 < s.a[0]; ++o0) {
        for (int64_t o1 = 0; o1 < s.a[1]; ++o1) {
          const T* g = gout + off[0] + o0 * s.st[0][0] + o1 * s.st[0][1];
          for (int64_t o2 = 0; o2 < s.a[2]; ++o2) {
            const M v = load(g[o2 * s.st[0][2]]);
            if (round_each) {
              taps(o0, o1, o2, [&](int64_t at, M w) { acc[at] = load(store<T>(acc[at] + w * v)); });
            } else {
              taps(o0, o1, o2, [&](int64_t at, M w) { acc[at] += w * v; });
            }
          }
        }
      }
      T* q = gin + off[1];
      for (int64_t r = 0; r < nb; ++r) {
        q[r / (s.b[1] * s.b[2]) * s.st[1][0] + r / s.b[2] % s.b[1] * s.st[1][1] + r % s.b[2] * s.st[1][2]] =
            store<T>(acc[r]);
      }
    }
  });
}

// ---- upsampling -------------------------------------------------------------------

// The source of output position o along one dim, as ATen's UpSample.h.
struct Linear {
  int64_t i0, i1;
  float l0, l1;  // weights in float (opmath) for half types and float
  double d0, d1;  // and in double for double
};

template <class M>
M area_scale(int64_t in, int64_t out, bool align_corners, double scale) {
  if (align_corners) return out > 1 ? static_cast<M>(in - 1) / static_cast<M>(out - 1) : M(0);
  return scale > 0 ? static_cast<M>(1.0 / scale) : static_cast<M>(in) / static_cast<M>(out);
}

int64_t nearest_source(int64_t o, int64_t in, int64_t out, double scale) {
  if (out == in) return o;
  if (out == 2 * in) return o >> 1;
  const float sc = scale > 0 ? static_cast<float>(1.0 / scale) : static_cast<float>(in) / static_cast<float>(out);
  return std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * sc)), in - 1);
}

template <class M>
void linear_source(int64_t o, int64_t in, int64_t out, bool align_corners, double scale, int64_t& i0, int64_t& i1,
                   M& l0, M& l1) {
  if (out == in) {
    i0 = i1 = o;
    l0 = M(1);
    l1 = M(0);
    return;
  }
  const M ratio = area_scale<M>(in, out, align_corners, scale);
  M real = align_corners ? ratio * static_cast<M>(o) : ratio * (static_cast<M>(o) + M(0.5)) - M(0.5);
  if (!align_corners && real < M(0)) real = M(0);
  i0 = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
  l1 = std::min(std::max(real - static_cast<M>(i0), M(0)), M(1));
  i1 = i0 + (i0 < in - 1 ? 1 : 0);
  l0 = M(1) - l1;
}

template <class T>
void upsample_typed(int threads, refkUpsampleMode mode, const Spatial& s, T* out, const T* in, bool align_corners,
                    const double (&scales)[3]) {
  using M = opmath_t<std::conditional_t<is_floating_v<T>, T, float>>;
  std::vector<int64_t> i0[3], i1[3];
  std::vector<M> l0[3], l1[3];
  for (int d = 0; d < 3; ++d) {
    for (int64_t o = 0; o < s.a[d]; ++o) {
      int64_t a = 0, b = 0;
      M x = M(1), y = M(0);
      if (mode == refkUpsampleNearest) {
        a = b = nearest_source(o, s.b[d], s.a[d], scales[d]);
      } else {
        linear_source<M>(o, s.b[d], s.a[d], align_corners, scales[d], a, b, x, y);
      }
      i0[d].push_back(a * s.st[1][d]);
      i1[d].push_back(b * s.st[1][d]);
      l0[d].push_back(x);
      l1[d].push_back(y);
    }
  }
  const int64_t ls = s.lane_st[1];
  for_rows(threads, s, [&](const int64_t* off, int64_t o0, int64_t o1) {
    T* orow = out + off[0] + o0 * s.st[0][0] + o1 * s.st[0][1];
    const T* base = in + off[1];
    if (mode == refkUpsampleNearest) {
      const T* irow = base + i0[0][o0] + i0[1][o1];
      for (int64_t k = 0; k < s.a[2]; ++k) {
        for (int64_t c = 0; c < s.lanes; ++c) orow[k * s.st[0][2] + c * s.lane_st[0]] = irow[i0[2][k] + c * ls];
      }
      return;
    }
    // l0 * (rest at i0) + l1 * (rest at i1), dim by dim (ATen's interpolate()).
    const int64_t r0[2] = {i0[0][o0], i1[0][o0]}, r1[2] = {i0[1][o1], i1[1][o1]};
    const M w0[2] = {l0[0][o0], l1[0][o0]}, w1[2] = {l0[1][o1], l1[1][o1]};
    for (int64_t k = 0; k < s.a[2]; ++k) {
      const int64_t r2[2] = {i0[2][k], i1[2][k]};
      const M w2[2] = {l0[2][k], l1[2][k]};
      for (int64_t c = 0; c < s.lanes; ++c) {
        const T* q = base + c * ls;
        M v0[2];
        for (int a = 0; a < 2; ++a) {
          M v1[2];
          for (int b = 0; b < 2; ++b) {
            const T* r = q + r0[a] + r1[b];
            v1[b] = w2[0] * M(load(r[r2[0]])) + w2[1] * M(load(r[r2[1]]));
          }
          v0[a] = w1[0] * v1[0] + w1[1] * v1[1];
        }
        const M v = w0[0] * v0[0] + w0[1] * v0[1];
        orow[k * s.st[0][2] + c * s.lane_st[0]] = store<T>(v);
      }
    }
  });
}

// uint8 (bi)linear resizing is ATen's (Pillow's): per dim, int16 weights
// with a shared fixed-point precision, applied one dim at a time from the
// innermost, each pass rounding and clamping to uint8 (ATen's
// _compute_index_ranges_int16_weights and the separable uint8 kernels).
struct Taps {
  std::vector<int64_t> first;   // first input index of output o
  std::vector<int16_t> w;       // 2 weights per output
  std::vector<int> count;       // taps used (0..2)
  int precision = 0;
};

Taps int16_taps(int64_t in, int64_t out, bool align_corners, double opt_scale) {
  const double scale = area_scale<double>(in, out, align_corners, opt_scale);
  const double support = 1.0, delta = align_corners ? 0.5 : 0.0;
  std::vector<double> wf(static_cast<size_t>(out) * 2, 0.0);
  Taps t;
  double wt_max = 0;
  for (int64_t o = 0; o < out; ++o) {
    const double center = scale * (static_cast<double>(o) + 0.5 - delta);
    const int64_t xmin = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5 + delta), 0);
    const int64_t xsize =
        std::clamp<int64_t>(std::min(static_cast<int64_t>(center + support + 0.5 + delta), in) - xmin, 0, 2);
    double total = 0;
    for (int64_t j = 0; j < xsize; ++j) {
      const double x = std::fabs(static_cast<double>(j + xmin) - center + 0.5 - delta);
      wf[o * 2 + j] = x < 1.0 ? 1.0 - x : 0.0;
      total += wf[o * 2 + j];
    }
    if (total != 0.0) {
      for (int64_t j = 0; j < xsize; ++j) {
        wf[o * 2 + j] /= total;
        wt_max = std::max(wt_max, wf[o * 2 + j]);
      }
    }
    t.first.push_back(xmin);
    t.count.push_back(static_cast<int>(xsize));
  }
  for (t.precision = 0; t.precision < 22; ++t.precision) {
    if (static_cast<int>(0.5 + wt_max * (1 << (t.precision + 1))) >= (1 << 15)) break;
  }
  for (double v : wf) {
    v *= (1 << t.precision);
    t.w.push_back(static_cast<int16_t>(v < 0 ? static_cast<int>(-0.5 + v) : static_cast<int>(0.5 + v)));
  }
  return t;
}

// dst[p][o][k] from src[p][i][k] (rows of `inner` elements) with the taps of one dim.
void uint8_pass(int threads, std::vector<uint8_t>& dst, const std::vector<uint8_t>& src, int64_t outer, int64_t in,
                int64_t out, int64_t inner, const Taps& t) {
  dst.assign(static_cast<size_t>(outer * out * inner), 0);
  parallel_for(outer * out, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, inner)), threads,
               [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t p = r / out, o = r % out;
      const uint8_t* s0 = src.data() + (p * in + t.first[o]) * inner;
      uint8_t* d = dst.data() + r * inner;
      for (int64_t k = 0; k < inner; ++k) {
        int32_t acc = 1 << (t.precision - 1);
        for (int j = 0; j < t.count[o]; ++j) acc += int32_t{s0[j * inner + k]} * t.w[o * 2 + j];
        d[k] = static_cast<uint8_t>(std::clamp(acc >> t.precision, 0, 255));
      }
    }
  });
}

void upsample_linear_uint8(int threads, const Spatial& s, uint8_t* out, const uint8_t* in, bool align_corners,
                           const double (&scales)[3]) {
  // Gather the input into [plane][d0][d1][d2], run the passes, scatter.
  const int64_t P = s.planes;
  std::vector<uint8_t> cur(static_cast<size_t>(P * s.b_numel())), next;
  parallel_for(P, 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      int64_t off[3];
      s.plane_offsets(p, off);
      uint8_t* d = cur.data() + p * s.b_numel();
      for (int64_t r = 0; r < s.b_numel(); ++r) {
        d[r] = in[off[1] + r / (s.b[1] * s.b[2]) * s.st[1][0] + r / s.b[2] % s.b[1] * s.st[1][1] +
                  r % s.b[2] * s.st[1][2]];
      }
    }
  });
  int64_t size[3] = {s.b[0], s.b[1], s.b[2]};
  for (int d = 2; d >= 0; --d) {
    if (s.a[d] == s.b[d]) continue;
    const Taps t = int16_taps(s.b[d], s.a[d], align_corners, scales[d]);
    int64_t outer = P, inner = 1;
    for (int e = 0; e < d; ++e) outer *= size[e];
    for (int e = d + 1; e < 3; ++e) inner *= size[e];
    uint8_pass(threads, next, cur, outer, size[d], s.a[d], inner, t);
    size[d] = s.a[d];
    std::swap(cur, next);
  }
  parallel_for(P, 1, threads, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      int64_t off[3];
      s.plane_offsets(p, off);
      const uint8_t* src = cur.data() + p * s.a_numel();
      for (int64_t r = 0; r < s.a_numel(); ++r) {
        out[off[0] + r / (s.a[1] * s.a[2]) * s.st[0][0] + r / s.a[2] % s.a[1] * s.st[0][1] + r % s.a[2] * s.st[0][2]] =
            src[r];
      }
    }
  });
}

// ---- grid_sampler_2d (ATen's GridSampler.h arithmetic) ------------------------------

// Note [Half arithmetic in grid_sampler]: eager computes grid_sampler_2d on
// float16/bfloat16 in the storage type itself (c10::Half arithmetic: every
// operation rounds to the type), and its coordinates are sensitive enough
// that float arithmetic lands outside float16's tolerance. Rounded<H> is a
// value with that arithmetic; float and double compute in themselves.
template <class H>
struct Rounded {
  float v = 0;
  static float round(float x) { return H::to_float(H::from_float(x)); }
  Rounded() = default;
  template <class X, class = std::enable_if_t<std::is_arithmetic_v<X>>>
  explicit Rounded(X x) : v(round(static_cast<float>(x))) {}
  explicit operator int64_t() const { return static_cast<int64_t>(v); }
  explicit operator float() const { return v; }
  friend Rounded operator+(Rounded a, Rounded b) { return Rounded(a.v + b.v); }
  friend Rounded operator-(Rounded a, Rounded b) { return Rounded(a.v - b.v); }
  friend Rounded operator*(Rounded a, Rounded b) { return Rounded(a.v * b.v); }
  friend Rounded operator/(Rounded a, Rounded b) { return Rounded(a.v / b.v); }
  friend bool operator<(Rounded a, Rounded b) { return a.v < b.v; }
  friend Rounded floor(Rounded a) { return Rounded(std::floor(a.v)); }
  friend Rounded fabs(Rounded a) { return Rounded(std::fabs(a.v)); }
  friend Rounded fmod(Rounded a, Rounded b) { return Rounded(std::fmod(a.v, b.v)); }
  friend Rounded nearbyint(Rounded a) { return Rounded(std::nearbyint(a.v)); }
};
using std::fabs;
using std::floor;
using std::fmod;
using std::nearbyint;

template <class T>
using grid_t = std::conditional_t<is_half_v<T>, Rounded<T>, T>;

template <class M>
M unnormalize(M coord, int64_t size, bool align_corners) {
  if (align_corners) return ((coord + M(1)) / M(2)) * M(size - 1);
  return ((coord + M(1)) * M(size) - M(1)) / M(2);
}

template <class M>
M clip(M in, int64_t limit) {
  return std::min(M(limit - 1), std::max(in, M(0)));
}

template <class M>
M reflect(M in, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return M(0);
  const M min = M(twice_low) / M(2);
  const M span = M(twice_high - twice_low) / M(2);
  in = fabs(in - min);
  const M extra = fmod(in, span);
  const int flips = static_cast<int>(static_cast<int64_t>(floor(in / span)));
  return flips % 2 == 0 ? extra + min : span - extra + min;
}

template <class M>
M compute_coordinates(M coord, int64_t size, int padding, bool align_corners) {
  if (padding == 1) {
    coord = clip(coord, size);
  } else if (padding == 2) {
    coord = align_corners ? reflect(coord, 0, 2 * (size - 1)) : reflect(coord, -1, 2 * size - 1);
    coord = clip(coord, size);
  }
  return coord;
}

// ATen's cubic_interp1d: x0 * c0 + x1 * c1 + x2 * c2 + x3 * c3, A = -0.75.
template <class M>
M cubic_interp(const M (&x)[4], M t) {
  const M A = M(-0.75);
  const auto conv1 = [&](M v) { return ((A + M(2)) * v - (A + M(3))) * v * v + M(1); };
  const auto conv2 = [&](M v) { return ((A * v - M(5) * A) * v + M(8) * A) * v - M(4) * A; };
  const M t1 = t + M(1), u = M(1) - t, u1 = u + M(1);
  return x[0] * conv2(t1) + x[1] * conv1(t) + x[2] * conv1(u) + x[3] * conv2(u1);
}

template <class T>
void grid_sample_typed(int threads, const refkTensor& out, const refkTensor& in, const refkTensor& grid, int interp,
                       int padding, bool align_corners) {
  using M = grid_t<T>;
  const int64_t N = in.sizes[0], C = in.sizes[1], H = in.sizes[2], W = in.sizes[3];
  const int64_t Ho = out.sizes[2], Wo = out.sizes[3];
  const T* ip = static_cast<const T*>(in.data);
  const T* gp = static_cast<const T*>(grid.data);
  T* op = static_cast<T*>(out.data);
  const int64_t* is = in.strides;
  const int64_t* os = out.strides;
  const int64_t* gs = grid.strides;
  const auto value = [](T v) { return M(load(v)); };
  const auto result = [](M v) { return store<T>(static_cast<opmath_t<T>>(v)); };
  parallel_for(N * Ho * Wo, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, C * 16)), threads,
               [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / (Ho * Wo), h = item / Wo % Ho, w = item % Wo;
      const T* g = gp + n * gs[0] + h * gs[1] + w * gs[2];
      const M gx = value(g[0]), gy = value(g[gs[3]]);
      const T* inp = ip + n * is[0];
      T* outp = op + n * os[0] + h * os[2] + w * os[3];
      const auto inside = [&](int64_t y, int64_t x) { return y >= 0 && y < H && x >= 0 && x < W; };
      if (interp == 2) {  // bicubic: padding applies per tap
        const M x = unnormalize(gx, W, align_corners), y = unnormalize(gy, H, align_corners);
        const M x0 = floor(x), y0 = floor(y);
        const M tx = x - x0, ty = y - y0;
        for (int64_t c = 0; c < C; ++c) {
          const T* plane = inp + c * is[1];
          const auto bounded = [&](M xx, M yy) {
            const int64_t ix = static_cast<int64_t>(compute_coordinates(xx, W, padding, align_corners));
            const int64_t iy = static_cast<int64_t>(compute_coordinates(yy, H, padding, align_corners));
            return inside(iy, ix) ? value(plane[iy * is[2] + ix * is[3]]) : M(0);
          };
          M rows[4];
          for (int i = 0; i < 4; ++i) {
            const M yy = y0 - M(1) + M(i);
            const M taps[4] = {bounded(x0 - M(1), yy), bounded(x0, yy), bounded(x0 + M(1), yy),
                               bounded(x0 + M(2), yy)};
            rows[i] = cubic_interp(taps, tx);
          }
          outp[c * os[1]] = result(cubic_interp(rows, ty));
        }
        continue;
      }
      const M x = compute_coordinates(unnormalize(gx, W, align_corners), W, padding, align_corners);
      const M y = compute_coordinates(unnormalize(gy, H, align_corners), H, padding, align_corners);
      if (interp == 1) {  // nearest
        const int64_t xn = static_cast<int64_t>(nearbyint(x)), yn = static_cast<int64_t>(nearbyint(y));
        for (int64_t c = 0; c < C; ++c) {
          outp[c * os[1]] = inside(yn, xn) ? inp[c * is[1] + yn * is[2] + xn * is[3]] : store<T>(0.0f);
        }
        continue;
      }
      // bilinear: the in-bounds corners' weighted values added in ATen's order
      const int64_t x0 = static_cast<int64_t>(floor(x)), y0 = static_cast<int64_t>(floor(y));
      const int64_t x1 = x0 + 1, y1 = y0 + 1;
      const M nw = (M(x1) - x) * (M(y1) - y), ne = (x - M(x0)) * (M(y1) - y);
      const M sw = (M(x1) - x) * (y - M(y0)), se = (x - M(x0)) * (y - M(y0));
      const int64_t ys[4] = {y0, y0, y1, y1}, xs[4] = {x0, x1, x0, x1};
      const M ws[4] = {nw, ne, sw, se};
      for (int64_t c = 0; c < C; ++c) {
        M acc = M(0);
        for (int k = 0; k < 4; ++k) {
          if (inside(ys[k], xs[k])) acc = acc + value(inp[c * is[1] + ys[k] * is[2] + xs[k] * is[3]]) * ws[k];
        }
        outp[c * os[1]] = result(acc);
      }
    }
  });
}

// ---- col2im -------------------------------------------------------------------------

template <class T>
void col2im_typed(int threads, const refkTensor& out, const refkTensor& in, const int64_t* k, const int64_t* dil,
                  const int64_t* pad, const int64_t* st) {
  using S = std::conditional_t<std::is_same_v<T, bool>, bool, opmath_t<T>>;
  const int64_t N = out.sizes[0], C = out.sizes[1], H = out.sizes[2], W = out.sizes[3];
  const int64_t hc = (H + 2 * pad[0] - (dil[0] * (k[0] - 1) + 1)) / st[0] + 1;
  const int64_t wc = (W + 2 * pad[1] - (dil[1] * (k[1] - 1) + 1)) / st[1] + 1;
  const T* ip = static_cast<const T*>(in.data);
  T* op = static_cast<T*>(out.data);
  parallel_for(N * C * H, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, W * k[0] * k[1])), threads,
               [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t n = r / (C * H), c = r / H % C, h = r % H;
      for (int64_t w = 0; w < W; ++w) {
        S acc = S(0);
        for (int64_t i = 0; i < k[0]; ++i) {
          const int64_t hh = h + pad[0] - i * dil[0];
          if (hh < 0 || hh % st[0] != 0 || hh / st[0] >= hc) continue;
          for (int64_t j = 0; j < k[1]; ++j) {
            const int64_t ww = w + pad[1] - j * dil[1];
            if (ww < 0 || ww % st[1] != 0 || ww / st[1] >= wc) continue;
            const T v = ip[n * in.strides[0] + ((c * k[0] + i) * k[1] + j) * in.strides[1] +
                           (hh / st[0] * wc + ww / st[1]) * in.strides[2]];
            if constexpr (std::is_same_v<T, bool>) {
              acc = acc || v;
            } else {
              acc += S(load(v));
            }
          }
        }
        op[n * out.strides[0] + c * out.strides[1] + h * out.strides[2] + w * out.strides[3]] = store<T>(acc);
      }
    }
  });
}

// Pad and upsample (and their backwards) take two operands of one dtype whose
// trailing nspatial (1 to 3) dims are the planes.
refkStatus check_planes(const char* op, const refkTensor& a, const refkTensor& b, int32_t nspatial) {
  if (nspatial < 1 || nspatial > 3 || a.ndim != b.ndim || a.dtype != b.dtype) {
    return fail(refkErrorInvalidValue,
                std::string(op) + ": operands must be of one dtype with nspatial (1 to 3) trailing dims");
  }
  return refkSuccess;
}

// The caller's per-dim scales (or none: 0, computed from the sizes) right-aligned
// into Spatial's three slots.
void right_aligned(double (&sc)[3], int32_t nspatial, const double* scales) {
  for (int i = 0; i < 3; ++i) sc[i] = 0.0;
  for (int i = 0; i < nspatial; ++i) sc[3 - nspatial + i] = scales != nullptr ? scales[i] : 0.0;
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkPad(const refkContext* ctx, refkPadMode mode, const refkTensor* out, const refkTensor* in,
                              int32_t nspatial, const int64_t* before) {
  return guarded("refkPad", [&]() -> refkStatus {
    if (auto st = check_planes("refkPad", *out, *in, nspatial)) return st;
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, in});
    const Spatial s = make_spatial(nspatial, *out, *in, nullptr, true);
    std::vector<int64_t> src[3];
    if (!pad_tables(mode, s, nspatial, before, src)) {
      return fail(refkErrorInvalidValue, "refkPad: padding larger than the input");
    }
    return by_size(in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      pad_typed<T>(ctx->num_threads, s, static_cast<T*>(out->data), static_cast<const T*>(in->data), src);
      return refkSuccess;
    });
  });
}

extern "C" refkStatus refkUpsample(const refkContext* ctx, refkUpsampleMode mode, const refkTensor* out,
                                   const refkTensor* in, int32_t nspatial, int32_t align_corners,
                                   const double* scales) {
  return guarded("refkUpsample", [&]() -> refkStatus {
    if (auto st = check_planes("refkUpsample", *out, *in, nspatial)) return st;
    if (in->dtype == refkBool) return unsupported("refkUpsample", in->dtype);
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, in});
    const bool by_taps = mode == refkUpsampleLinear && in->dtype == refkUInt8;
    const Spatial s = make_spatial(nspatial, *out, *in, nullptr, !by_taps);
    double sc[3];
    right_aligned(sc, nspatial, scales);
    if (by_taps) {
      upsample_linear_uint8(ctx->num_threads, s, static_cast<uint8_t*>(out->data), static_cast<const uint8_t*>(in->data),
                            align_corners != 0, sc);
      return refkSuccess;
    }
    return dispatch(in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, bool>) {
        return unsupported("refkUpsample", in->dtype);
      } else {
        upsample_typed<T>(ctx->num_threads, mode, s, static_cast<T*>(out->data), static_cast<const T*>(in->data),
                          align_corners != 0, sc);
        return refkSuccess;
      }
    });
  });
}

extern "C" refkStatus refkGridSample2d(const refkContext* ctx, const refkTensor* out, const refkTensor* in,
                                       const refkTensor* grid, int32_t interpolation, int32_t padding,
                                       int32_t align_corners) {
  return guarded("refkGridSample2d", [&]() -> refkStatus {
    if (out->ndim != 4 || in->ndim != 4 || grid->ndim != 4 || grid->sizes[3] != 2 || out->dtype != in->dtype ||
        grid->dtype != in->dtype || interpolation < 0 || interpolation > 2 || padding < 0 || padding > 2) {
      return fail(refkErrorInvalidValue, "refkGridSample2d: bad operands or modes");
    }
    if (in->dtype < refkFloat16) return unsupported("refkGridSample2d", in->dtype);
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, in, grid});
    return dispatch(in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (!is_floating_v<T>) {
        return unsupported("refkGridSample2d", in->dtype);
      } else {
        grid_sample_typed<T>(ctx->num_threads, *out, *in, *grid, interpolation, padding, align_corners != 0);
        return refkSuccess;
      }
    });
  });
}

extern "C" refkStatus refkCol2im(const refkContext* ctx, const refkTensor* out, const refkTensor* in,
                                 const int64_t* kernel, const int64_t* dilation, const int64_t* padding,
                                 const int64_t* stride) {
  return guarded("refkCol2im", [&]() -> refkStatus {
    if (out->ndim != 4 || in->ndim != 3 || out->dtype != in->dtype) {
      return fail(refkErrorInvalidValue, "refkCol2im: out must be (N, C, H, W) and in (N, C * kh * kw, L)");
    }
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, in});
    return dispatch(in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      col2im_typed<T>(ctx->num_threads, *out, *in, kernel, dilation, padding, stride);
      return refkSuccess;
    });
  });
}

namespace refk {
namespace {

template <class T>
void upsample_backward_typed(int threads, refkUpsampleMode mode, const Spatial& s, int nspatial, T* gin,
                             const T* gout, bool align_corners, const double (&scales)[3]) {
  using M = opmath_t<T>;
  std::vector<int64_t> i0[3], i1[3];
  std::vector<M> l0[3], l1[3];
  for (int d = 0; d < 3; ++d) {
    for (int64_t o = 0; o < s.a[d]; ++o) {
      int64_t a = 0, b = 0;
      M x = M(1), y = M(0);
      if (mode == refkUpsampleNearest) {
        a = b = nearest_source(o, s.b[d], s.a[d], scales[d]);
      } else {
        linear_source<M>(o, s.b[d], s.a[d], align_corners, scales[d], a, b, x, y);
      }
      i0[d].push_back(a);
      i1[d].push_back(b);
      l0[d].push_back(x);
      l1[d].push_back(y);
    }
  }
  const int first = 3 - nspatial;  // padded dims have one tap
  scatter_planes<T>(threads, s, gin, gout, false, [&](int64_t o0, int64_t o1, int64_t o2, auto&& add) {
    if (mode == refkUpsampleNearest) {
      add((i0[0][o0] * s.b[1] + i0[1][o1]) * s.b[2] + i0[2][o2], M(1));
      return;
    }
    const int64_t r0[2] = {i0[0][o0], i1[0][o0]}, r1[2] = {i0[1][o1], i1[1][o1]}, r2[2] = {i0[2][o2], i1[2][o2]};
    const M w0[2] = {l0[0][o0], l1[0][o0]}, w1[2] = {l0[1][o1], l1[1][o1]}, w2[2] = {l0[2][o2], l1[2][o2]};
    for (int a = 0; a < (first > 0 ? 1 : 2); ++a) {
      for (int b = 0; b < (first > 1 ? 1 : 2); ++b) {
        for (int c = 0; c < 2; ++c) {
          const M w = first > 0 ? (first > 1 ? w2[c] : w1[b] * w2[c]) : w0[a] * w1[b] * w2[c];
          add((r0[a] * s.b[1] + r1[b]) * s.b[2] + r2[c], w);
        }
      }
    }
  });
}

}  // namespace
}  // namespace refk

extern "C" refkStatus refkPadBackward(const refkContext* ctx, refkPadMode mode, const refkTensor* grad_in,
                                      const refkTensor* grad_out, int32_t nspatial, const int64_t* before) {
  return guarded("refkPadBackward", [&]() -> refkStatus {
    if (auto st = check_planes("refkPadBackward", *grad_out, *grad_in, nspatial)) return st;
    if (grad_in->dtype < refkFloat16) return unsupported("refkPadBackward", grad_in->dtype);
    if (numel(*grad_in) == 0) return refkSuccess;
    const Access access({grad_in, grad_out});
    const Spatial s = make_spatial(nspatial, *grad_out, *grad_in, nullptr, false);
    std::vector<int64_t> src[3];
    if (!pad_tables(mode, s, nspatial, before, src)) {
      return fail(refkErrorInvalidValue, "refkPadBackward: padding larger than the input");
    }
    return dispatch(grad_in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (!is_floating_v<T>) {
        return unsupported("refkPadBackward", grad_in->dtype);
      } else {
        // ATen's CPU padding backward adds in the dtype itself.
        scatter_planes<T>(ctx->num_threads, s, static_cast<T*>(grad_in->data), static_cast<const T*>(grad_out->data),
                          is_half_v<T>, [&](int64_t o0, int64_t o1, int64_t o2, auto&& add) {
                            add((src[0][o0] * s.b[1] + src[1][o1]) * s.b[2] + src[2][o2], opmath_t<T>(1));
                          });
        return refkSuccess;
      }
    });
  });
}

extern "C" refkStatus refkUpsampleBackward(const refkContext* ctx, refkUpsampleMode mode, const refkTensor* grad_in,
                                           const refkTensor* grad_out, int32_t nspatial, int32_t align_corners,
                                           const double* scales) {
  return guarded("refkUpsampleBackward", [&]() -> refkStatus {
    if (auto st = check_planes("refkUpsampleBackward", *grad_out, *grad_in, nspatial)) return st;
    if (grad_in->dtype < refkFloat16) return unsupported("refkUpsampleBackward", grad_in->dtype);
    if (numel(*grad_in) == 0) return refkSuccess;
    const Access access({grad_in, grad_out});
    const Spatial s = make_spatial(nspatial, *grad_out, *grad_in, nullptr, false);
    double sc[3];
    right_aligned(sc, nspatial, scales);
    return dispatch(grad_in->dtype, [&](auto tag) -> refkStatus {
      using T = typename decltype(tag)::type;
      if constexpr (!is_floating_v<T>) {
        return unsupported("refkUpsampleBackward", grad_in->dtype);
      } else {
        upsample_backward_typed<T>(ctx->num_threads, mode, s, nspatial, static_cast<T*>(grad_in->data),
                                   static_cast<const T*>(grad_out->data), align_corners != 0, sc);
        return refkSuccess;
      }
    });
  });
}
