// How refkReduce accumulates, written once for every device (Note [One
// definition per semantics] in Dtypes.h): the plan of a reduction (kept and
// reduced dims, coalesced), each op's accumulator type, initial value, step
// and combine, and how mean and var finish. The CPU library runs them in
// vectorizable inner/vertical/strided loops over threads, the CUDA library
// in a block (or a thread) per output; both accumulate floating inputs in
// double and integers in int64 (acc_t).
#pragma once

#include "kernels/common/Dtypes.h"

#include <limits>

namespace refk {

// Kept and reduced dims of a reduction (byte strides), size-1 dims dropped,
// adjacent dims merged: output element m reads input elements
// offset_of(m, kept, kept_sizes, kept_in) + offset_of(k, red, red_sizes,
// red_in) for k in [0, K).
struct ReduceShape {
  int kept = 0, red = 0;
  int64_t kept_sizes[REFK_MAX_DIMS], kept_in[REFK_MAX_DIMS], kept_out[REFK_MAX_DIMS];
  int64_t red_sizes[REFK_MAX_DIMS], red_in[REFK_MAX_DIMS];
  int64_t M = 1, K = 1;
};

// `in`'s first out.ndim dims are kept, its next `nreduce` reduced.
inline ReduceShape plan_reduce(const refkTensor& out, const refkTensor& in, int nreduce) {
  ReduceShape s;
  const int64_t isz = itemsize(in.dtype), osz = itemsize(out.dtype);
  for (int d = 0; d < out.ndim; ++d) {
    s.M *= in.sizes[d];
    if (in.sizes[d] == 1) continue;
    const int64_t si = in.strides[d] * isz, so = out.strides[d] * osz;
    if (s.kept > 0 && s.kept_in[s.kept - 1] == si * in.sizes[d] && s.kept_out[s.kept - 1] == so * in.sizes[d]) {
      s.kept_sizes[s.kept - 1] *= in.sizes[d];
      s.kept_in[s.kept - 1] = si;
      s.kept_out[s.kept - 1] = so;
    } else {
      s.kept_sizes[s.kept] = in.sizes[d];
      s.kept_in[s.kept] = si;
      s.kept_out[s.kept++] = so;
    }
  }
  for (int d = out.ndim; d < out.ndim + nreduce; ++d) {
    s.K *= in.sizes[d];
    if (in.sizes[d] == 1) continue;
    const int64_t si = in.strides[d] * isz;
    if (s.red > 0 && s.red_in[s.red - 1] == si * in.sizes[d]) {
      s.red_sizes[s.red - 1] *= in.sizes[d];
      s.red_in[s.red - 1] = si;
    } else {
      s.red_sizes[s.red] = in.sizes[d];
      s.red_in[s.red++] = si;
    }
  }
  return s;
}

// Byte offset of linear index i in a row-major space of `n` dims.
REFK_HOST_DEVICE inline int64_t offset_of(int64_t i, int n, const int64_t* sizes, const int64_t* strides) {
  int64_t off = 0;
  for (int d = n - 1; d >= 0; --d) {
    off += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return off;
}

// One reduction as init / step / combine (of two partial accumulators).
// step and combine take the accumulator's type as a parameter X: the CPU
// library's float lanes (Note [Two-level sums] in kernels/cpu/Reduce.cpp)
// run them in float before combining into A. Var steps as a sum (its mean);
// var_value finishes it from a second pass.
template <class T, refkReduceOp OP>
struct Reducer {
  using A = std::conditional_t<OP == refkAmax || OP == refkAmin, opmath_t<T>,
                               std::conditional_t<OP == refkAny || OP == refkAll, bool, acc_t<T>>>;
  REFK_HOST_DEVICE static A init() {
    if constexpr (OP == refkProd) return A(1);
    if constexpr (OP == refkAll) return true;
    if constexpr (OP == refkAmax) {
      if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
      else return std::numeric_limits<A>::lowest();
    }
    if constexpr (OP == refkAmin) {
      if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
      else return std::numeric_limits<A>::max();
    }
    return A(0);
  }
  template <class X>
  REFK_HOST_DEVICE static X step(X acc, opmath_t<T> x) {
    if constexpr (OP == refkSum || OP == refkMean || OP == refkVar) return acc + X(x);
    if constexpr (OP == refkNansum) {
      if constexpr (is_floating_v<T>) return x != x ? acc : acc + X(x);
      else return acc + X(x);
    }
    if constexpr (OP == refkProd) return acc * X(x);
    if constexpr (OP == refkAny) return acc || (x != opmath_t<T>(0));
    if constexpr (OP == refkAll) return acc && (x != opmath_t<T>(0));
    if constexpr (OP == refkAmax || OP == refkAmin) return combine(acc, X(x));
    return acc;
  }
  // amax/amin propagate NaN.
  template <class X>
  REFK_HOST_DEVICE static X combine(X a, X b) {
    if constexpr (OP == refkProd) return a * b;
    if constexpr (OP == refkAny) return a || b;
    if constexpr (OP == refkAll) return a && b;
    if constexpr (OP == refkAmax || OP == refkAmin) {
      if constexpr (is_floating_v<T>) {
        if (a != a) return a;
        if (b != b) return b;
      }
      if constexpr (OP == refkAmax) return a > b ? a : b;
      else return a < b ? a : b;
    }
    return a + b;
  }
};

// mean from the sum of K elements; var from the sum of squared deviations
// from the mean, divided by K - correction (at least 0: NaN or inf, as
// ATen's).
template <class A>
REFK_HOST_DEVICE inline double mean_value(A sum, int64_t K) {
  return static_cast<double>(sum) / static_cast<double>(K);
}
REFK_HOST_DEVICE inline double var_value(double m2, int64_t K, double correction) {
  const double dof = static_cast<double>(K) - correction;
  return m2 / (0.0 < dof ? dof : 0.0);
}

// Writes v into an element of any library dtype (reductions pick the
// output dtype at run time).
template <class A>
REFK_HOST_DEVICE inline void write_value(refkDtype d, char* p, A v) {
  switch (d) {
    case refkBool: *reinterpret_cast<bool*>(p) = store<bool>(v); break;
    case refkUInt8: *reinterpret_cast<uint8_t*>(p) = store<uint8_t>(v); break;
    case refkInt8: *reinterpret_cast<int8_t*>(p) = store<int8_t>(v); break;
    case refkInt16: *reinterpret_cast<int16_t*>(p) = store<int16_t>(v); break;
    case refkInt32: *reinterpret_cast<int32_t*>(p) = store<int32_t>(v); break;
    case refkInt64: *reinterpret_cast<int64_t*>(p) = store<int64_t>(v); break;
    case refkFloat16: *reinterpret_cast<Half*>(p) = store<Half>(v); break;
    case refkBFloat16: *reinterpret_cast<BFloat16*>(p) = store<BFloat16>(v); break;
    case refkFloat32: *reinterpret_cast<float*>(p) = store<float>(v); break;
    case refkFloat64: *reinterpret_cast<double*>(p) = store<double>(v); break;
    default: break;  // no reduction writes complex or a storage dtype (callers dispatch first)
  }
}

}  // namespace refk
