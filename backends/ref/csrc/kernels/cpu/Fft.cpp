// FFTs of the CPU reference library (refkFft in RefKernels.h): complex to
// complex, real to complex and complex to real, any length, over any dims.
//
// Note [FFT plans]: a length n whose prime factors are all at most
// kMaxRadix runs as a mixed-radix Cooley-Tukey FFT (decimation in time,
// radix 4 first, then 2, 3 and a generic O(p^2) butterfly for other
// primes). Any other length runs Bluestein's algorithm: the DFT as the
// convolution of x[j] * w[j] with conj(w), w[j] = exp(-pi i j^2 / n),
// computed with FFTs of a power-of-two length m >= 2n - 1. Twiddles and
// chirps are computed in double (j^2 mod 2n in integers, so large j lose
// nothing) and rounded once to the precision; plans are cached per length
// and precision. The inverse transform is conj(FFT(conj(x))). A pass
// transforms every line along one dim: a thread gathers a line into a
// contiguous buffer, transforms it and scatters it; threads split lines. A
// real-to-complex pass transforms two real lines as one complex one.
#include "kernels/common/Complex.h"
#include "kernels/cpu/Common.h"

#include <map>
#include <memory>
#include <mutex>

namespace refk {
namespace {

template <class R>
using Cx = Complex<R>;

constexpr int64_t kMaxRadix = 64;

template <class R>
struct Plan {
  int64_t n = 1;
  // Mixed radix: the radices in the order the recursion takes them, and
  // exp(-2 pi i k / n) for k < n.
  std::vector<int64_t> radices;
  std::vector<Cx<R>> twiddles;
  // Bluestein: the chirp w (n), FFT_m of the convolution kernel divided by m,
  // and the plan of length m.
  std::vector<Cx<R>> chirp, kernel;
  std::shared_ptr<const Plan<R>> inner;

  bool bluestein() const { return inner != nullptr; }
  // Elements of scratch a transform needs besides its input and output.
  int64_t scratch() const { return bluestein() ? 2 * inner->n + inner->scratch() : 0; }
};

template <class R>
std::shared_ptr<const Plan<R>> plan_for(int64_t n);
template <class R>
void transform(const Plan<R>& plan, Cx<R>* out, const Cx<R>* in, Cx<R>* scratch);

template <class R>
std::shared_ptr<const Plan<R>> make_plan(int64_t n) {
  auto p = std::make_shared<Plan<R>>();
  p->n = n;
  std::vector<int64_t> radices;
  int64_t rest = n;
  while (rest % 4 == 0) {
    radices.push_back(4);
    rest /= 4;
  }
  for (int64_t f = 2; f <= kMaxRadix && rest > 1;) {
    if (rest % f == 0) {
      radices.push_back(f);
      rest /= f;
    } else {
      ++f;
    }
  }
  const double pi = 3.14159265358979323846;
  if (rest == 1) {
    p->radices = std::move(radices);
    p->twiddles.resize(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      const double a = -2.0 * pi * static_cast<double>(k) / static_cast<double>(n);
      p->twiddles[k] = {static_cast<R>(std::cos(a)), static_cast<R>(std::sin(a))};
    }
    return p;
  }
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  p->inner = plan_for<R>(m);
  p->chirp.resize(static_cast<size_t>(n));
  int64_t e = 0;  // j^2 mod 2n, exactly: j^2 = (j - 1)^2 + 2j - 1
  for (int64_t j = 0; j < n; ++j) {
    if (j > 0) e = (e + 2 * j - 1) % (2 * n);
    const double a = -pi * static_cast<double>(e) / static_cast<double>(n);
    p->chirp[j] = {static_cast<R>(std::cos(a)), static_cast<R>(std::sin(a))};
  }
  std::vector<Cx<R>> b(static_cast<size_t>(m), Cx<R>{0, 0});
  for (int64_t j = 0; j < n; ++j) {
    b[j] = conj(p->chirp[j]);
    if (j > 0) b[m - j] = b[j];
  }
  p->kernel.resize(static_cast<size_t>(m));
  std::vector<Cx<R>> scratch(static_cast<size_t>(p->inner->scratch()) + 1);
  transform(*p->inner, p->kernel.data(), b.data(), scratch.data());
  for (auto& v : p->kernel) v = scaled(v, static_cast<R>(1.0 / static_cast<double>(m)));
  return p;
}

template <class R>
std::shared_ptr<const Plan<R>> plan_for(int64_t n) {
  static std::mutex mu;
  static std::map<int64_t, std::shared_ptr<const Plan<R>>> cache;
  {
    std::lock_guard<std::mutex> g(mu);
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
  }
  auto p = make_plan<R>(n);  // outside the lock: Bluestein plans ask for their inner one
  std::lock_guard<std::mutex> g(mu);
  return cache.emplace(n, std::move(p)).first->second;
}

// The butterflies of one stage: `f` holds p sub-transforms of length m one
// after another; twiddle index k * fstride is exp(-2 pi i k / m p).
template <class R>
void butterfly(Cx<R>* f, const Plan<R>& plan, int64_t fstride, int64_t m, int64_t p) {
  const Cx<R>* tw = plan.twiddles.data();
  if (p == 2) {
    for (int64_t k = 0; k < m; ++k) {
      const Cx<R> t = f[m + k] * tw[k * fstride];
      f[m + k] = f[k] - t;
      f[k] = f[k] + t;
    }
  } else if (p == 4) {
    for (int64_t k = 0; k < m; ++k) {
      const Cx<R> s0 = f[k + m] * tw[k * fstride], s1 = f[k + 2 * m] * tw[2 * k * fstride],
                  s2 = f[k + 3 * m] * tw[3 * k * fstride];
      const Cx<R> s5 = f[k] - s1, a = f[k] + s1, s3 = s0 + s2, s4 = s0 - s2;
      f[k + 2 * m] = a - s3;
      f[k] = a + s3;
      f[k + m] = {s5.re + s4.im, s5.im - s4.re};
      f[k + 3 * m] = {s5.re - s4.im, s5.im + s4.re};
    }
  } else if (p == 3) {
    const R h = tw[fstride * m].im;  // sin(-2 pi / 3)
    for (int64_t k = 0; k < m; ++k) {
      const Cx<R> s1 = f[k + m] * tw[k * fstride], s2 = f[k + 2 * m] * tw[2 * k * fstride];
      const Cx<R> s3 = s1 + s2, s0 = scaled(s1 - s2, h);
      const Cx<R> a = f[k] - scaled(s3, R(0.5));
      f[k] = f[k] + s3;
      f[k + m] = {a.re - s0.im, a.im + s0.re};
      f[k + 2 * m] = {a.re + s0.im, a.im - s0.re};
    }
  } else {
    const int64_t n = plan.n;
    Cx<R> s[kMaxRadix];
    for (int64_t u = 0; u < m; ++u) {
      for (int64_t q = 0; q < p; ++q) s[q] = f[u + q * m];
      for (int64_t q = 0; q < p; ++q) {
        const int64_t k = u + q * m;
        Cx<R> acc = s[0];
        int64_t t = 0;
        for (int64_t j = 1; j < p; ++j) {
          t += fstride * k;
          if (t >= n) t -= n;
          acc = acc + s[j] * tw[t];
        }
        f[k] = acc;
      }
    }
  }
}

// out[0 .. n) = the forward DFT of in[0, in_stride, ...) (stage onwards).
template <class R>
void mixed_radix(const Plan<R>& plan, Cx<R>* out, const Cx<R>* in, int64_t in_stride, size_t stage, int64_t fstride) {
  const int64_t p = plan.radices[stage];
  int64_t m = 1;
  for (size_t s = stage + 1; s < plan.radices.size(); ++s) m *= plan.radices[s];
  if (m == 1) {
    for (int64_t j = 0; j < p; ++j) out[j] = in[j * fstride * in_stride];
  } else {
    for (int64_t j = 0; j < p; ++j) {
      mixed_radix(plan, out + j * m, in + j * fstride * in_stride, in_stride, stage + 1, fstride * p);
    }
  }
  butterfly(out, plan, fstride, m, p);
}

// The forward DFT of in (n elements) into out; in and out do not overlap;
// scratch holds plan.scratch() elements.
template <class R>
void transform(const Plan<R>& plan, Cx<R>* out, const Cx<R>* in, Cx<R>* scratch) {
  const int64_t n = plan.n;
  if (n == 1) {
    out[0] = in[0];
    return;
  }
  if (!plan.bluestein()) {
    mixed_radix(plan, out, in, 1, 0, 1);
    return;
  }
  const int64_t m = plan.inner->n;
  Cx<R>* a = scratch;
  Cx<R>* fa = scratch + m;
  Cx<R>* rest = scratch + 2 * m;
  for (int64_t j = 0; j < n; ++j) a[j] = in[j] * plan.chirp[j];
  for (int64_t j = n; j < m; ++j) a[j] = {0, 0};
  transform(*plan.inner, fa, a, rest);
  // The inverse FFT of fa * kernel as conj(FFT(conj(.))).
  for (int64_t j = 0; j < m; ++j) fa[j] = conj(fa[j] * plan.kernel[j]);
  transform(*plan.inner, a, fa, rest);
  for (int64_t j = 0; j < n; ++j) out[j] = conj(a[j]) * plan.chirp[j];
}

// The layout of one pass: lines of length n along dim d of src and dst,
// `count` results per line written to dst.
struct Pass {
  const refkTensor* src;
  const refkTensor* dst;
  int d;
  int64_t n;      // transform length
  int64_t count;  // results kept per line
  int64_t lines;  // numel(dst) / dst.sizes[d]
};

// Offsets of line l in src and dst: l enumerates dst's other dims row-major.
inline void line_offsets(const Pass& p, int64_t l, int64_t& src_off, int64_t& dst_off) {
  src_off = dst_off = 0;
  for (int k = p.dst->ndim - 1; k >= 0; --k) {
    if (k == p.d) continue;
    const int64_t size = p.dst->sizes[k];
    const int64_t i = l % size;
    l /= size;
    src_off += i * p.src->strides[k];
    dst_off += i * p.dst->strides[k];
  }
}

enum class Kind { C2C, R2C, C2R };

// Runs one pass of precision R: gathers each line (complex, real or the
// Hermitian half, by kind), transforms it forward or backward and writes
// scale * the result (its real part for C2R).
template <class R>
void run_pass(const Pass& p, Kind kind, bool forward, R scale, int threads) {
  if (p.lines == 0 || p.n == 0) return;
  const auto plan = plan_for<R>(p.n);
  const int64_t n = p.n;
  const int64_t ss = p.src->strides[p.d], ds = p.dst->strides[p.d];
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1));
  parallel_for(p.lines, grain, threads, [&](int64_t begin, int64_t end) {
    std::vector<Cx<R>> buf(static_cast<size_t>(2 * n + plan->scratch()));
    Cx<R>* x = buf.data();
    Cx<R>* y = x + n;
    Cx<R>* scratch = y + n;
    for (int64_t l = begin; l < end; ++l) {
      int64_t so = 0, dof = 0;
      line_offsets(p, l, so, dof);
      if (kind == Kind::R2C && l + 1 < end) {
        // Two real lines a, b as one complex transform Z of a + i b: A[k] =
        // (Z[k] + conj(Z[-k])) / 2, B[k] = (Z[k] - conj(Z[-k])) / 2i.
        int64_t so2 = 0, dof2 = 0;
        line_offsets(p, ++l, so2, dof2);
        const R* a = static_cast<const R*>(p.src->data) + so;
        const R* b = static_cast<const R*>(p.src->data) + so2;
        for (int64_t j = 0; j < n; ++j) x[j] = {a[j * ss], b[j * ss]};
        transform(*plan, y, x, scratch);
        Cx<R>* oa = static_cast<Cx<R>*>(p.dst->data) + dof;
        Cx<R>* ob = static_cast<Cx<R>*>(p.dst->data) + dof2;
        const R h = scale * R(0.5);
        for (int64_t k = 0; k < p.count; ++k) {
          const Cx<R> z = y[k], w = conj(y[k == 0 ? 0 : n - k]);
          const Cx<R> sum = z + w, diff = z - w;
          oa[k * ds] = scaled(sum, h);
          ob[k * ds] = {diff.im * h, -diff.re * h};
        }
        continue;
      }
      if (kind == Kind::R2C) {
        const R* s = static_cast<const R*>(p.src->data) + so;
        for (int64_t j = 0; j < n; ++j) x[j] = {s[j * ss], R(0)};
      } else if (kind == Kind::C2C) {
        const Cx<R>* s = static_cast<const Cx<R>*>(p.src->data) + so;
        for (int64_t j = 0; j < n; ++j) x[j] = s[j * ss];
      } else {
        const Cx<R>* s = static_cast<const Cx<R>*>(p.src->data) + so;
        const int64_t half = n / 2 + 1;
        for (int64_t j = 0; j < half; ++j) x[j] = s[j * ss];
        for (int64_t j = half; j < n; ++j) x[j] = conj(x[n - j]);
        x[0].im = 0;
        if (n % 2 == 0) x[n / 2].im = 0;
      }
      if (forward) {
        transform(*plan, y, x, scratch);
      } else {
        for (int64_t j = 0; j < n; ++j) x[j] = conj(x[j]);
        transform(*plan, y, x, scratch);
        for (int64_t j = 0; j < n; ++j) y[j] = conj(y[j]);
      }
      if (kind == Kind::C2R) {
        R* o = static_cast<R*>(p.dst->data) + dof;
        for (int64_t k = 0; k < p.count; ++k) o[k * ds] = y[k].re * scale;
      } else {
        Cx<R>* o = static_cast<Cx<R>*>(p.dst->data) + dof;
        for (int64_t k = 0; k < p.count; ++k) o[k * ds] = scaled(y[k], scale);
      }
    }
  });
}

refkDtype complex_of(refkDtype d) {
  return d == refkFloat32 ? refkComplex64 : d == refkFloat64 ? refkComplex128 : refkBool;
}

refkStatus check_fft(refkFftKind kind, const refkTensor& out, const refkTensor& in, int32_t ndims,
                     const int32_t* dims) {
  const auto bad = [](const std::string& why) { return fail(refkErrorInvalidValue, "fft: " + why); };
  const bool c2c = kind == refkFftC2C, r2c = kind == refkFftR2C;
  const refkDtype complex_dtype = c2c ? in.dtype : r2c ? out.dtype : in.dtype;
  if (!is_complex(complex_dtype)) return unsupported_dtype(complex_dtype);
  if (c2c && out.dtype != in.dtype) return bad("out and in must share a complex dtype");
  if (r2c && complex_of(in.dtype) != out.dtype) return bad("out must be the complex dtype of in's precision");
  if (kind == refkFftC2R && complex_of(out.dtype) != in.dtype) {
    return bad("in must be the complex dtype of out's precision");
  }
  if (ndims < 1 || ndims > in.ndim || in.ndim != out.ndim) return bad("bad dims");
  if (kind == refkFftC2R && ndims != 1) return bad("a complex-to-real transform takes one dim");
  bool seen[REFK_MAX_DIMS] = {};
  for (int32_t i = 0; i < ndims; ++i) {
    if (dims[i] < 0 || dims[i] >= in.ndim || seen[dims[i]]) return bad("dims must be distinct and in range");
    seen[dims[i]] = true;
  }
  const int last = dims[ndims - 1];
  for (int k = 0; k < in.ndim; ++k) {
    if (c2c || k != last) {
      if (in.sizes[k] != out.sizes[k]) return bad("operand shapes differ");
    } else if (r2c && out.sizes[k] > in.sizes[k]) {
      return bad("out has more frequencies than in has elements");
    } else if (kind == refkFftC2R && in.sizes[k] < out.sizes[k] / 2 + 1) {
      return bad("in holds fewer than n / 2 + 1 frequencies");
    }
  }
  return refkSuccess;
}

template <class R>
void run_fft(const refkContext& ctx, refkFftKind kind, const refkTensor& out, const refkTensor& in, int32_t ndims,
             const int32_t* dims, bool forward, R scale) {
  const int threads = ctx.num_threads;
  const auto pass = [&](const refkTensor& src, int d, int64_t n, int64_t count) {
    const int64_t lines = out.sizes[d] == 0 ? 0 : numel(out) / out.sizes[d];
    return Pass{&src, &out, d, n, count, lines};
  };
  if (kind == refkFftC2R) {
    const int d = dims[0];
    run_pass<R>(pass(in, d, out.sizes[d], out.sizes[d]), Kind::C2R, false, scale, threads);
    return;
  }
  // R2C transforms its real dim first; C2C takes the dims in order. The
  // first pass reads in and scales, the rest work on out in place.
  int first = 0;
  if (kind == refkFftR2C) {
    const int d = dims[ndims - 1];
    run_pass<R>(pass(in, d, in.sizes[d], out.sizes[d]), Kind::R2C, true, scale, threads);
    --ndims;
  } else {
    const int d = dims[first++];
    run_pass<R>(pass(in, d, in.sizes[d], in.sizes[d]), Kind::C2C, forward, scale, threads);
  }
  for (int i = first; i < ndims; ++i) {
    const int d = dims[i];
    run_pass<R>(pass(out, d, out.sizes[d], out.sizes[d]), Kind::C2C, forward, R(1), threads);
  }
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" {

refkStatus refkFft(const refkContext* ctx, refkFftKind kind, const refkTensor* out, const refkTensor* in,
                   int32_t ndims, const int32_t* dims, int32_t forward, double scale) {
  return guarded("fft", [&] {
    if (auto s = check_fft(kind, *out, *in, ndims, dims)) return s;
    if (numel(*out) == 0) return refkSuccess;
    const Access access({out, in});
    const refkDtype complex_dtype = kind == refkFftR2C ? out->dtype : in->dtype;
    return dispatch_complex(complex_dtype, [&](auto tag) -> refkStatus {
      using R = decltype(typename decltype(tag)::type{}.re);
      run_fft<R>(*ctx, kind, *out, *in, ndims, dims, forward != 0, static_cast<R>(scale));
      return refkSuccess;
    });
  });
}

}  // extern "C"
