// Arithmetic on the library's complex elements (Complex<R> in Dtypes.h,
// Note [Complex dtypes] in RefKernels.h), written once for both libraries
// (Note [One definition per semantics]): what the FFT and the complex
// add/sub/mul/div/eq/ne of refkBinary and complex scatter_add compute per
// element.
#pragma once

#include "kernels/common/Dtypes.h"

#include <cmath>

namespace refk {

template <class R>
REFK_HOST_DEVICE inline Complex<R> operator+(Complex<R> a, Complex<R> b) {
  return {a.re + b.re, a.im + b.im};
}
template <class R>
REFK_HOST_DEVICE inline Complex<R> operator-(Complex<R> a, Complex<R> b) {
  return {a.re - b.re, a.im - b.im};
}
template <class R>
REFK_HOST_DEVICE inline Complex<R> operator*(Complex<R> a, Complex<R> b) {
  return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re};
}
template <class R>
REFK_HOST_DEVICE inline Complex<R> scaled(Complex<R> a, R s) {
  return {a.re * s, a.im * s};
}
// Both parts equal (NaN equals nothing), as c10::complex's ==.
template <class R>
REFK_HOST_DEVICE inline bool operator==(Complex<R> a, Complex<R> b) {
  return a.re == b.re && a.im == b.im;
}
template <class R>
REFK_HOST_DEVICE inline Complex<R> conj(Complex<R> a) {
  return {a.re, -a.im};
}

// a / b as c10::complex divides: scaled by the larger part of b (Smith's
// algorithm), so |b| near the range's ends does not overflow; 0 / 0 parts
// give NaN and x / 0 inf, part by part.
template <class R>
REFK_HOST_DEVICE inline Complex<R> divide(Complex<R> a, Complex<R> b) {
  const R abs_c = std::abs(b.re), abs_d = std::abs(b.im);
  if (abs_c >= abs_d) {
    if (abs_c == R(0) && abs_d == R(0)) return {a.re / abs_c, a.im / abs_d};
    const R rat = b.im / b.re, scl = R(1) / (b.re + b.im * rat);
    return {(a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl};
  }
  const R rat = b.re / b.im, scl = R(1) / (b.im + b.re * rat);
  return {(a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl};
}

}  // namespace refk
