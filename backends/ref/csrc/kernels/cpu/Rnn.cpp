// Recurrent-cell kernels of the CPU reference library: the fused LSTM and
// GRU cells and their gradients (RefKernels.h, "recurrent cells"). The
// matrix products stay with the glue (refkGemm); what is left is pointwise
// gate math per hidden unit, so threads split the batch rows and every row
// walks its hidden units, reading gate k of unit j at column k * H + j.
// Half types load to float, compute there and round each result once.
#include "kernels/cpu/Common.h"

namespace refk {
namespace {

// Element (b, c) of a 2-d operand, in elements.
template <class T>
struct Rows {
  T* p;
  int64_t s0, s1;
  explicit Rows(const refkTensor& t) : p(static_cast<T*>(t.data)), s0(t.strides[0]), s1(t.strides[1]) {}
  T& operator()(int64_t b, int64_t c) const { return p[b * s0 + c * s1]; }
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
  opmath_t<T> operator()(int64_t c) const { return p ? load(p[c * s0]) : opmath_t<T>(0); }
  opmath_t<T> at(int64_t b, int64_t c) const { return p ? load(p[b * s0 + c * s1]) : opmath_t<T>(0); }
};

template <class C>
C sigmoid(C x) {
  return C(1) / (C(1) + std::exp(-x));
}

// Runs row(b) for every batch row on the pool, a few hundred units per task.
template <class F>
void for_rows(int threads, int64_t batch, int64_t hidden, F&& row) {
  const int64_t grain = std::max<int64_t>(1, 2048 / std::max<int64_t>(hidden, 1));
  parallel_for(batch, grain, threads, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) row(b);
  });
}

template <class T>
void lstm_forward(int threads, const refkTensor& hy_t, const refkTensor& cy_t, const refkTensor& ws_t,
                  const refkTensor& ig_t, const refkTensor& hg_t, const refkTensor& cx_t, const refkTensor* b1_t,
                  const refkTensor* b2_t) {
  using C = opmath_t<T>;
  const int64_t batch = cx_t.sizes[0], h = cx_t.sizes[1];
  const Rows<T> hy(hy_t), cy(cy_t), ws(ws_t), ig(ig_t), hg(hg_t), cx(cx_t);
  const Optional<T> b1(b1_t), b2(b2_t);
  for_rows(threads, batch, h, [&](int64_t b) {
    for (int64_t j = 0; j < h; ++j) {
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
  });
}

template <class T>
void lstm_backward(int threads, const refkTensor& gg_t, const refkTensor& gcx_t, const refkTensor* ghy_t,
                   const refkTensor* gcy_t, const refkTensor& cx_t, const refkTensor& cy_t, const refkTensor& ws_t) {
  using C = opmath_t<T>;
  const int64_t batch = cx_t.sizes[0], h = cx_t.sizes[1];
  const Rows<T> gg(gg_t), gcx(gcx_t), cx(cx_t), cy(cy_t), ws(ws_t);
  const Optional<T> ghy(ghy_t), gcy(gcy_t);
  for_rows(threads, batch, h, [&](int64_t b) {
    for (int64_t j = 0; j < h; ++j) {
      const C i = load(ws(b, j)), f = load(ws(b, h + j)), g = load(ws(b, 2 * h + j)), o = load(ws(b, 3 * h + j));
      const C go = ghy.at(b, j), t = std::tanh(load(cy(b, j)));
      const C gc = go * o * (C(1) - t * t) + gcy.at(b, j);
      gg(b, j) = store<T>(gc * g * (C(1) - i) * i);
      gg(b, h + j) = store<T>(gc * load(cx(b, j)) * (C(1) - f) * f);
      gg(b, 2 * h + j) = store<T>(gc * i * (C(1) - g * g));
      gg(b, 3 * h + j) = store<T>(go * t * (C(1) - o) * o);
      gcx(b, j) = store<T>(gc * f);
    }
  });
}

template <class T>
void gru_forward(int threads, const refkTensor& hy_t, const refkTensor& ws_t, const refkTensor& ig_t,
                 const refkTensor& hg_t, const refkTensor& hx_t, const refkTensor* b1_t, const refkTensor* b2_t) {
  using C = opmath_t<T>;
  const int64_t batch = hx_t.sizes[0], h = hx_t.sizes[1];
  const Rows<T> hy(hy_t), ws(ws_t), ig(ig_t), hg(hg_t), hx(hx_t);
  const Optional<T> b1(b1_t), b2(b2_t);
  for_rows(threads, batch, h, [&](int64_t b) {
    for (int64_t j = 0; j < h; ++j) {
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
  });
}

template <class T>
void gru_backward(int threads, const refkTensor& gi_t, const refkTensor& gh_t, const refkTensor& ghx_t,
                  const refkTensor& ghy_t, const refkTensor& ws_t) {
  using C = opmath_t<T>;
  const int64_t batch = ghy_t.sizes[0], h = ghy_t.sizes[1];
  const Rows<T> gi(gi_t), gh(gh_t), ghx(ghx_t), ghy(ghy_t), ws(ws_t);
  for_rows(threads, batch, h, [&](int64_t b) {
    for (int64_t j = 0; j < h; ++j) {
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
  });
}

bool floating(refkDtype d) {
  return d == refkFloat16 || d == refkBFloat16 || d == refkFloat32 || d == refkFloat64;
}

bool present(const refkTensor* t) {
  return t != nullptr && t->data != nullptr;
}

// Every present operand 2-d (B, cols * H) of one floating dtype, biases
// 1-d (gates * H); an error status naming `op` otherwise.
struct Shape {
  const refkTensor* t;
  int64_t cols;  // in units of H; 0 for a bias of `gates` * H elements
};
refkStatus check_cell(const char* op, refkDtype dtype, int64_t batch, int64_t h, int64_t gates,
                      std::initializer_list<Shape> operands) {
  if (!floating(dtype)) return unsupported(op, dtype);
  for (const Shape& s : operands) {
    if (!present(s.t)) continue;
    if (s.t->dtype != dtype) return fail(refkErrorInvalidValue, std::string(op) + ": operands of one dtype expected");
    const bool ok = s.cols == 0 ? s.t->ndim == 1 && s.t->sizes[0] == gates * h
                                : s.t->ndim == 2 && s.t->sizes[0] == batch && s.t->sizes[1] == s.cols * h;
    if (!ok) return fail(refkErrorInvalidValue, std::string(op) + ": operand of unexpected shape");
  }
  return refkSuccess;
}

// Runs f(Tag<T>{}) for the floating storage type of d; other dtypes are errors.
template <class F>
refkStatus floating_dispatch(const char* op, refkDtype d, F&& f) {
  return dispatch(d, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating_v<T>) {
      f(tag);
      return refkSuccess;
    } else {
      return unsupported(op, d);
    }
  });
}

}  // namespace
}  // namespace refk

using namespace refk;

extern "C" refkStatus refkLstmCell(const refkContext* ctx, const refkTensor* hy, const refkTensor* cy,
                                   const refkTensor* workspace, const refkTensor* input_gates,
                                   const refkTensor* hidden_gates, const refkTensor* cx, const refkTensor* input_bias,
                                   const refkTensor* hidden_bias) {
  return guarded("lstm_cell", [&] {
    if (cx->ndim != 2) return fail(refkErrorInvalidValue, "lstm_cell: cx must be 2-d");
    const int64_t batch = cx->sizes[0], h = cx->sizes[1];
    if (present(input_bias) != present(hidden_bias)) {
      return fail(refkErrorInvalidValue, "lstm_cell: both biases or neither");
    }
    if (auto s = check_cell("lstm_cell", cx->dtype, batch, h, 4,
                            {{hy, 1}, {cy, 1}, {workspace, 4}, {input_gates, 4}, {hidden_gates, 4}, {input_bias, 0},
                             {hidden_bias, 0}})) {
      return s;
    }
    if (batch == 0 || h == 0) return refkSuccess;
    const Access access({hy, cy, workspace, input_gates, hidden_gates, cx, input_bias, hidden_bias});
    return floating_dispatch("lstm_cell", cx->dtype, [&](auto tag) {
      lstm_forward<typename decltype(tag)::type>(ctx->num_threads, *hy, *cy, *workspace, *input_gates, *hidden_gates,
                                                 *cx, input_bias, hidden_bias);
    });
  });
}

extern "C" refkStatus refkLstmCellBackward(const refkContext* ctx, const refkTensor* grad_gates,
                                           const refkTensor* grad_cx, const refkTensor* grad_hy,
                                           const refkTensor* grad_cy, const refkTensor* cx, const refkTensor* cy,
                                           const refkTensor* workspace) {
  return guarded("lstm_cell_backward", [&] {
    if (cx->ndim != 2) return fail(refkErrorInvalidValue, "lstm_cell_backward: cx must be 2-d");
    const int64_t batch = cx->sizes[0], h = cx->sizes[1];
    if (auto s = check_cell("lstm_cell_backward", cx->dtype, batch, h, 4,
                            {{grad_gates, 4}, {grad_cx, 1}, {grad_hy, 1}, {grad_cy, 1}, {cy, 1}, {workspace, 4}})) {
      return s;
    }
    if (batch == 0 || h == 0) return refkSuccess;
    const Access access({grad_gates, grad_cx, grad_hy, grad_cy, cx, cy, workspace});
    return floating_dispatch("lstm_cell_backward", cx->dtype, [&](auto tag) {
      lstm_backward<typename decltype(tag)::type>(ctx->num_threads, *grad_gates, *grad_cx, grad_hy, grad_cy, *cx, *cy,
                                                  *workspace);
    });
  });
}

extern "C" refkStatus refkGruCell(const refkContext* ctx, const refkTensor* hy, const refkTensor* workspace,
                                  const refkTensor* input_gates, const refkTensor* hidden_gates, const refkTensor* hx,
                                  const refkTensor* input_bias, const refkTensor* hidden_bias) {
  return guarded("gru_cell", [&] {
    if (hx->ndim != 2) return fail(refkErrorInvalidValue, "gru_cell: hx must be 2-d");
    const int64_t batch = hx->sizes[0], h = hx->sizes[1];
    if (present(input_bias) != present(hidden_bias)) {
      return fail(refkErrorInvalidValue, "gru_cell: both biases or neither");
    }
    if (auto s = check_cell("gru_cell", hx->dtype, batch, h, 3,
                            {{hy, 1}, {workspace, 5}, {input_gates, 3}, {hidden_gates, 3}, {input_bias, 0},
                             {hidden_bias, 0}})) {
      return s;
    }
    if (batch == 0 || h == 0) return refkSuccess;
    const Access access({hy, workspace, input_gates, hidden_gates, hx, input_bias, hidden_bias});
    return floating_dispatch("gru_cell", hx->dtype, [&](auto tag) {
      gru_forward<typename decltype(tag)::type>(ctx->num_threads, *hy, *workspace, *input_gates, *hidden_gates, *hx,
                                                input_bias, hidden_bias);
    });
  });
}

extern "C" refkStatus refkGruCellBackward(const refkContext* ctx, const refkTensor* grad_input_gates,
                                          const refkTensor* grad_hidden_gates, const refkTensor* grad_hx,
                                          const refkTensor* grad_hy, const refkTensor* workspace) {
  return guarded("gru_cell_backward", [&] {
    if (grad_hy->ndim != 2) return fail(refkErrorInvalidValue, "gru_cell_backward: grad_hy must be 2-d");
    const int64_t batch = grad_hy->sizes[0], h = grad_hy->sizes[1];
    if (auto s = check_cell("gru_cell_backward", grad_hy->dtype, batch, h, 3,
                            {{grad_input_gates, 3}, {grad_hidden_gates, 3}, {grad_hx, 1}, {workspace, 5}})) {
      return s;
    }
    if (batch == 0 || h == 0) return refkSuccess;
    const Access access({grad_input_gates, grad_hidden_gates, grad_hx, grad_hy, workspace});
    return floating_dispatch("gru_cell_backward", grad_hy->dtype, [&](auto tag) {
      gru_backward<typename decltype(tag)::type>(ctx->num_threads, *grad_input_gates, *grad_hidden_gates, *grad_hx,
                                                 *grad_hy, *workspace);
    });
  });
}
