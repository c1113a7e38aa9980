// The fused recurrent cells' gate math, written once for every device (Note
// [One definition per semantics] in Dtypes.h): what hidden unit j of batch
// row b computes in the LSTM and GRU cells and their gradients (RefKernels.h,
// "recurrent cells"), in opmath with each result rounded once. The CPU
// library threads over batch rows, the CUDA library runs a thread per unit.
#pragma once

#include "kernels/common/Checks.h"
#include "kernels/common/Dtypes.h"

#include <initializer_list>

namespace refk {
namespace rnn {

// Element (b, c) of a 2-d operand, in elements.
template <class T>
struct Rows {
  T* p;
  int64_t s0, s1;
  explicit Rows(const refkTensor& t) : p(static_cast<T*>(t.data)), s0(t.strides[0]), s1(t.strides[1]) {}
  REFK_HOST_DEVICE T& operator()(int64_t b, int64_t c) const { return p[b * s0 + c * s1]; }
};

// Element c of a 1-d bias as opmath, 0 when the bias is absent; also an
// absent gradient (2-d, zero) through at().
template <class T>
struct Optional {
  const T* p = nullptr;
  int64_t s0 = 0, s1 = 0;
  explicit Optional(const refkTensor* t) {
    if (t == nullptr || t->data == nullptr) return;
    p = static_cast<const T*>(t->data);
    s0 = t->strides[0];
    s1 = t->ndim > 1 ? t->strides[1] : 0;
  }
  REFK_HOST_DEVICE opmath_t<T> operator()(int64_t c) const { return p ? load(p[c * s0]) : opmath_t<T>(0); }
  REFK_HOST_DEVICE opmath_t<T> at(int64_t b, int64_t c) const {
    return p ? load(p[b * s0 + c * s1]) : opmath_t<T>(0);
  }
};

template <class C>
REFK_HOST_DEVICE inline C sigmoid(C x) {
  return C(1) / (C(1) + std::exp(-x));
}

template <class T>
REFK_HOST_DEVICE inline void lstm_unit(const Rows<T>& hy, const Rows<T>& cy, const Rows<T>& ws, const Rows<T>& ig,
                                       const Rows<T>& hg, const Rows<T>& cx, const Optional<T>& b1,
                                       const Optional<T>& b2, int64_t b, int64_t j, int64_t h) {
  using C = opmath_t<T>;
  auto gate = [&](int64_t k) {
    const int64_t c = k * h + j;
    return load(ig(b, c)) + load(hg(b, c)) + b1(c) + b2(c);
  };
  const C i = sigmoid(gate(0)), f = sigmoid(gate(1)), g = std::tanh(gate(2)), o = sigmoid(gate(3));
  const C cell = f * load(cx(b, j)) + i * g;
  hy(b, j) = store<T>(o * std::tanh(cell));
  cy(b, j) = store<T>(cell);
  ws(b, j) = store<T>(i);
  ws(b, h + j) = store<T>(f);
  ws(b, 2 * h + j) = store<T>(g);
  ws(b, 3 * h + j) = store<T>(o);
}

template <class T>
REFK_HOST_DEVICE inline void lstm_backward_unit(const Rows<T>& gg, const Rows<T>& gcx, const Optional<T>& ghy,
                                                const Optional<T>& gcy, const Rows<T>& cx, const Rows<T>& cy,
                                                const Rows<T>& ws, int64_t b, int64_t j, int64_t h) {
  using C = opmath_t<T>;
  const C i = load(ws(b, j)), f = load(ws(b, h + j)), g = load(ws(b, 2 * h + j)), o = load(ws(b, 3 * h + j));
  const C go = ghy.at(b, j), t = std::tanh(load(cy(b, j)));
  const C gc = go * o * (C(1) - t * t) + gcy.at(b, j);
  gg(b, j) = store<T>(gc * g * (C(1) - i) * i);
  gg(b, h + j) = store<T>(gc * load(cx(b, j)) * (C(1) - f) * f);
  gg(b, 2 * h + j) = store<T>(gc * i * (C(1) - g * g));
  gg(b, 3 * h + j) = store<T>(go * t * (C(1) - o) * o);
  gcx(b, j) = store<T>(gc * f);
}

template <class T>
REFK_HOST_DEVICE inline void gru_unit(const Rows<T>& hy, const Rows<T>& ws, const Rows<T>& ig, const Rows<T>& hg,
                                      const Rows<T>& hx, const Optional<T>& b1, const Optional<T>& b2, int64_t b,
                                      int64_t j, int64_t h) {
  using C = opmath_t<T>;
  const int64_t cr = j, cz = h + j, cn = 2 * h + j;
  const C r = sigmoid(load(ig(b, cr)) + load(hg(b, cr)) + b1(cr) + b2(cr));
  const C z = sigmoid(load(ig(b, cz)) + load(hg(b, cz)) + b1(cz) + b2(cz));
  const C hn = load(hg(b, cn)) + b2(cn);
  const C n = std::tanh(load(ig(b, cn)) + b1(cn) + r * hn);
  const T x = hx(b, j);
  hy(b, j) = store<T>(n + z * (load(x) - n));
  ws(b, j) = store<T>(r);
  ws(b, h + j) = store<T>(z);
  ws(b, 2 * h + j) = store<T>(n);
  ws(b, 3 * h + j) = x;
  ws(b, 4 * h + j) = store<T>(hn);
}

template <class T>
REFK_HOST_DEVICE inline void gru_backward_unit(const Rows<T>& gi, const Rows<T>& gh, const Rows<T>& ghx,
                                               const Rows<T>& ghy, const Rows<T>& ws, int64_t b, int64_t j,
                                               int64_t h) {
  using C = opmath_t<T>;
  const C r = load(ws(b, j)), z = load(ws(b, h + j)), n = load(ws(b, 2 * h + j));
  const C x = load(ws(b, 3 * h + j)), hn = load(ws(b, 4 * h + j)), go = load(ghy(b, j));
  const C gz = go * (x - n) * (C(1) - z) * z;
  const C gn = go * (C(1) - z) * (C(1) - n * n);
  const C gr = gn * hn * (C(1) - r) * r;
  gi(b, j) = gh(b, j) = store<T>(gr);
  gi(b, h + j) = gh(b, h + j) = store<T>(gz);
  gi(b, 2 * h + j) = store<T>(gn);
  gh(b, 2 * h + j) = store<T>(gn * r);
  ghx(b, j) = store<T>(go * z);
}

inline bool present(const refkTensor* t) { return t != nullptr && t->data != nullptr; }

// An operand of a cell: 2-d (B, cols * H), or a bias (cols 0) of gates * H.
struct Shape {
  const refkTensor* t;
  int64_t cols;
};

// The operands of cell call `op` (both libraries check them so, Note [One
// definition per semantics]): a floating dtype, and every present operand of
// that dtype and its expected shape.
inline check::Verdict check_cell(const char* op, refkDtype dtype, int64_t batch, int64_t h, int64_t gates,
                                 std::initializer_list<Shape> operands) {
  if (!is_floating_dtype(dtype)) return check::Verdict::unsupported(op, dtype);
  for (const Shape& s : operands) {
    if (!present(s.t)) continue;
    if (s.t->dtype != dtype) return check::Verdict::invalid(op, "operands of one dtype expected");
    const bool ok = s.cols == 0 ? s.t->ndim == 1 && s.t->sizes[0] == gates * h
                                : s.t->ndim == 2 && s.t->sizes[0] == batch && s.t->sizes[1] == s.cols * h;
    if (!ok) return check::Verdict::invalid(op, "operand of unexpected shape");
  }
  return {};
}

}  // namespace rnn
}  // namespace refk
