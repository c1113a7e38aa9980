// Unary elementwise kernels of the CUDA reference library. One kernel per
// dtype (and per predicate/same-dtype form) with the op chosen by a switch
// on a kernel argument: the branch is uniform across a launch, and the
// library compiles in seconds instead of once per (op, dtype). Each
// element's numerics are common/Pointwise.h's (shared with the CPU
// library), in opmath.
#include "kernels/common/Pointwise.h"
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {

namespace scalar = refk::scalar;

template <class T>
struct Predicate {
  refkUnaryOp op;
  __device__ bool operator()(opmath_t<T> x) const {
    using V = opmath_t<T>;
    switch (op) {
      case refkLogicalNot: return !(x != V(0));
      default: break;
    }
    if constexpr (is_floating_v<T>) {
      switch (op) {
        case refkIsNan: return isnan(x);
        case refkIsInf: return isinf(x);
        case refkIsPosInf: return isinf(x) && x > V(0);
        case refkIsNegInf: return isinf(x) && x < V(0);
        case refkIsFinite: return isfinite(x);
        case refkSignbit: return scalar::signbit(x);
        default: return false;
      }
    } else {
      switch (op) {
        case refkIsFinite: return true;
        case refkSignbit:
          if constexpr (std::is_signed_v<V>) return x < V(0);
          return false;
        default: return false;
      }
    }
  }
};

template <class T>
struct Same {
  refkUnaryOp op;
  refkUnaryParams p;
  __device__ opmath_t<T> operator()(opmath_t<T> x) const {
    using V = opmath_t<T>;
    if constexpr (std::is_same_v<T, bool>) {
      return !x;  // bitwise_not, the only same-dtype op on bool
    } else {
      switch (op) {
        case refkAbs: return scalar::abs(x);
        case refkNeg: return V(-x);
        case refkSign:
        case refkSgn: return scalar::sign(x);
        case refkRelu: return scalar::relu(x);
        case refkSquare: return V(x * x);
        case refkHardtanh: return scalar::hardtanh(x, V(p.p0), V(p.p1));
        default: break;
      }
      if constexpr (is_integral_v<T>) {
        if (op == refkBitwiseNot) return V(~x);
        return x;  // ceil, floor, round, trunc
      } else {
        const V one(1);
        switch (op) {
          case refkCeil: return ceil(x);
          case refkFloor: return floor(x);
          case refkTrunc: return trunc(x);
          case refkFrac: return x - trunc(x);
          case refkRound: return p.i == 0 ? nearbyint(x) : scalar::round_decimals(x, p.i);
          case refkExp: return exp(x);
          case refkExp2: return exp2(x);
          case refkExpm1: return expm1(x);
          case refkLog: return log(x);
          case refkLog2: return log2(x);
          case refkLog10: return log10(x);
          case refkLog1p: return log1p(x);
          case refkSin: return sin(x);
          case refkCos: return cos(x);
          case refkTan: return tan(x);
          case refkAsin: return asin(x);
          case refkAcos: return acos(x);
          case refkAtan: return atan(x);
          case refkSinh: return sinh(x);
          case refkCosh: return cosh(x);
          case refkTanh: return tanh(x);
          case refkAsinh: return asinh(x);
          case refkAcosh: return acosh(x);
          case refkAtanh: return atanh(x);
          case refkErf: return erf(x);
          case refkErfc: return erfc(x);
          case refkSqrt: return sqrt(x);
          case refkRsqrt: return one / sqrt(x);
          case refkReciprocal: return one / x;
          case refkSigmoid: return scalar::sigmoid(x);
          case refkSilu: return scalar::silu(x);
          case refkGeluNone: return scalar::gelu(x);
          case refkGeluTanh: return scalar::gelu_tanh(x);
          case refkElu: return scalar::elu(x, V(p.p0), V(p.p1), V(p.p2));
          case refkLeakyRelu: return scalar::leaky_relu(x, V(p.p0));
          case refkHardsigmoid: return scalar::hardsigmoid(x);
          case refkHardswish: return scalar::hardswish(x);
          case refkSoftplus: return scalar::softplus(x, V(p.p0), V(p.p1));
          case refkMish: return scalar::mish(x);
          default: return x;
        }
      }
    }
  }
};

template <class T>
struct Backward {
  refkUnaryOp op;
  refkUnaryParams p;
  __device__ opmath_t<T> operator()(opmath_t<T> g, opmath_t<T> x) const {
    using V = opmath_t<T>;
    switch (op) {
      case refkSilu: return scalar::silu_backward(g, x);
      case refkMish: return scalar::mish_backward(g, x);
      case refkSoftplus: return scalar::softplus_backward(g, x, V(p.p0), V(p.p1));
      case refkHardsigmoid: return scalar::hardsigmoid_backward(g, x);
      case refkHardtanh: return scalar::hardtanh_backward(g, x, V(p.p0), V(p.p1));
      default: return scalar::hardswish_backward(g, x);
    }
  }
};

bool has_backward(refkUnaryOp op) {
  return op == refkSilu || op == refkMish || op == refkSoftplus || op == refkHardsigmoid || op == refkHardswish ||
         op == refkHardtanh;
}

bool is_predicate(refkUnaryOp op) {
  switch (op) {
    case refkIsNan:
    case refkIsInf:
    case refkIsPosInf:
    case refkIsNegInf:
    case refkIsFinite:
    case refkLogicalNot:
    case refkSignbit: return true;
    default: return false;
  }
}

// Which (op, dtype) pairs exist: the CPU library's, checked on the host
// since a kernel cannot fail. Every op is named, so an op added to
// RefKernels.h later is refused instead of reaching a kernel's default case.
bool known(refkUnaryOp op) { return op >= refkAbs && op <= refkSignbit; }

bool supported(refkUnaryOp op, refkDtype d) {
  if (is_predicate(op)) return true;
  const bool floating = d == refkFloat16 || d == refkBFloat16 || d == refkFloat32 || d == refkFloat64;
  if (d == refkBool) return op == refkBitwiseNot;
  switch (op) {
    case refkAbs:
    case refkNeg:
    case refkSign:
    case refkSgn:
    case refkRelu:
    case refkSquare:
    case refkHardtanh: return true;
    case refkBitwiseNot: return !floating;
    case refkCeil:
    case refkFloor:
    case refkRound:
    case refkTrunc: return true;
    case refkFrac: case refkExp: case refkExp2: case refkExpm1: case refkLog: case refkLog2: case refkLog10:
    case refkLog1p: case refkSin: case refkCos: case refkTan: case refkAsin: case refkAcos: case refkAtan:
    case refkSinh: case refkCosh: case refkTanh: case refkAsinh: case refkAcosh: case refkAtanh: case refkErf:
    case refkErfc: case refkSqrt: case refkRsqrt: case refkReciprocal: case refkSigmoid: case refkGeluNone:
    case refkGeluTanh: case refkElu: case refkLeakyRelu: case refkSilu: case refkHardsigmoid: case refkHardswish:
    case refkSoftplus: case refkMish: return floating;
    default: return false;
  }
}

}  // namespace
}  // namespace refkc

using namespace refkc;

extern "C" refkStatus refkUnary(const refkContext* ctx, refkUnaryOp op, const refkTensor* out, const refkTensor* in,
                                const refkUnaryParams* params) {
  if (auto s = check_shapes("unary", {out, in})) return s;
  if (!known(op)) return not_implemented("refkUnary (this op)");
  if (!supported(op, in->dtype)) return unsupported("unary", in->dtype);
  const refkUnaryParams p = params ? *params : refkUnaryParams{0, 0, 0, 0};
  const refkTensor* ops[2] = {out, in};
  if (is_predicate(op)) {
    if (out->dtype != refkBool) return fail(refkErrorInvalidValue, "unary: predicates write bool");
  } else if (out->dtype != in->dtype) {
    return fail(refkErrorInvalidValue, "unary: output dtype must match the input's");
  }
  return dispatch(in->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (is_predicate(op)) return typed<bool, T, 1>("unary", ctx, ops, Predicate<T>{op});
    return typed<T, T, 1>("unary", ctx, ops, Same<T>{op, p});
  });
}

extern "C" refkStatus refkUnaryBackward(const refkContext* ctx, refkUnaryOp op, const refkTensor* grad_in,
                                        const refkTensor* grad, const refkTensor* x, const refkUnaryParams* params) {
  if (auto s = check_shapes("unary backward", {grad_in, grad, x})) return s;
  if (!has_backward(op)) return fail(refkErrorNotImplemented, "unary backward: no gradient of this op");
  if (grad_in->dtype != x->dtype || grad->dtype != x->dtype) {
    return fail(refkErrorInvalidValue, "unary backward: operands must share one dtype");
  }
  const refkUnaryParams p = params ? *params : refkUnaryParams{0, 0, 0, 0};
  const refkTensor* ops[3] = {grad_in, grad, x};
  return dispatch_floating("unary backward", x->dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return typed<T, T, 2>("unary backward", ctx, ops, Backward<T>{op, p});
  });
}
