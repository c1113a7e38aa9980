// How refkScatter combines what lands on an element, written once for
// every device (Note [One definition per semantics] in Dtypes.h): each
// reduction's step and identity on the accumulator type (ATen's functors:
// integers wrap, bool adds as "or" and multiplies as "and", amax/amin take a
// NaN source and keep a NaN accumulator), and how mean divides. Both
// libraries walk each column of index (its dims other than `dim`) along
// `dim` in ascending order, so every element combines its values in the
// same order on every device. refkIndexPut's accumulation adds with the
// same add(), in the element's dtype.
#pragma once

#include "kernels/common/Dtypes.h"

#include <limits>

namespace refk {
namespace scatter {

template <class A>
REFK_HOST_DEVICE inline A add(A a, A b) {
  if constexpr (std::is_same_v<A, bool>) {
    return a || b;
  } else if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else {
    return a + b;
  }
}

template <class A>
REFK_HOST_DEVICE inline A mul(A a, A b) {
  if constexpr (std::is_same_v<A, bool>) {
    return a && b;
  } else if constexpr (std::is_integral_v<A>) {
    return static_cast<A>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  } else {
    return a * b;
  }
}

template <class A>
REFK_HOST_DEVICE inline bool is_nan(A x) {
  if constexpr (std::is_floating_point_v<A>) {
    return x != x;
  } else {
    return false;
  }
}

// One step of a reduction (std::max/min as written: a NaN accumulator stays).
template <refkScatterReduce R, class A>
REFK_HOST_DEVICE inline A step(A acc, A x) {
  if constexpr (R == refkScatterAssign) {
    return x;
  } else if constexpr (R == refkScatterAdd || R == refkScatterMean) {
    return add(acc, x);
  } else if constexpr (R == refkScatterMultiply) {
    return mul(acc, x);
  } else if constexpr (R == refkScatterAmax) {
    return is_nan(x) ? x : (acc < x ? x : acc);
  } else {
    return is_nan(x) ? x : (x < acc ? x : acc);
  }
}

// The scattered value (no src) on the accumulator type: floating from the
// double field, integers and bool from the int64 one.
template <class A>
REFK_HOST_DEVICE inline A value_of(refkScalar v) {
  if constexpr (is_complex_v<A>) {
    return A{static_cast<decltype(A{}.re)>(v.f), 0};  // a real value (Note [Complex dtypes])
  } else if constexpr (is_floating_v<A>) {
    return store<A>(v.f);
  } else {
    return store<A>(v.i);
  }
}

// Where an element that receives values starts without include_self.
template <class A>
REFK_HOST_DEVICE inline A identity(refkScatterReduce r) {
  switch (r) {
    case refkScatterMultiply: return A(1);
    case refkScatterAmax:
      if constexpr (std::numeric_limits<A>::has_infinity) return -std::numeric_limits<A>::infinity();
      else return std::numeric_limits<A>::lowest();
    case refkScatterAmin:
      if constexpr (std::numeric_limits<A>::has_infinity) return std::numeric_limits<A>::infinity();
      else return std::numeric_limits<A>::max();
    default: return A(0);
  }
}

// One addition of index_put's accumulation: in T's precision (rounded
// once per value, as ATen's index_put_ with accumulate=True).
template <class T>
REFK_HOST_DEVICE inline T accumulate(T acc, T x) {
  return store<T>(add(load(acc), load(x)));
}

// Python's floor division for integers (ATen's div_floor; for unsigned
// types plain division), true division otherwise.
template <class A>
REFK_HOST_DEVICE inline A divide(A a, A b) {
  if constexpr (std::is_unsigned_v<A>) {
    return static_cast<A>(a / b);
  } else if constexpr (std::is_integral_v<A>) {
    if (b == A(-1)) return static_cast<A>(static_cast<uint64_t>(0) - static_cast<uint64_t>(a));
    const A q = static_cast<A>(a / b);
    return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<A>(q - 1) : q;
  } else {
    return a / b;
  }
}

// Mean: an element that received `received` values (> 0) becomes
// self / count, count = received (+1 with include_self) in self's dtype
// T (0 made 1), floor division for integers; A is the opmath type.
template <class T, class A>
REFK_HOST_DEVICE inline T mean_of(T self, int64_t received, bool include_self) {
  const int64_t c = received + (include_self ? 1 : 0);
  A count;
  if constexpr (std::is_integral_v<A>) {
    count = static_cast<A>(static_cast<uint64_t>(c));
  } else {
    count = load(store<T>(static_cast<A>(c)));
  }
  if (count == A(0)) count = A(1);
  return store<T>(divide(load(self), count));
}

}  // namespace scatter
}  // namespace refk
