// The kernel library's dtypes, written once for every device: the storage
// types of the half-precision dtypes and their conversions, the type traits
// kernels dispatch on, opmath loads and stores with their cast rules, item
// sizes and dtype dispatch. kernels/cpu/Common.h and kernels/cuda/Common.cuh
// both include it (Note [One definition per semantics]).
//
// Note [One definition per semantics]: what a kernel computes (dtypes and
// casts, Philox, the scalar functions of the pointwise ops, how reductions
// accumulate) lives in kernels/common/ as small inline functions marked
// REFK_HOST_DEVICE; kernels/cpu/ and kernels/cuda/ keep only what differs
// per device (loops, launches, threads, memory). A semantic fix made here
// reaches both libraries, so they cannot drift apart. The headers are
// torch-free and need no CUDA header: nvcc and the host compiler read the
// same text.
#pragma once

#include "kernels/RefKernels.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__CUDACC__)
#define REFK_HOST_DEVICE __host__ __device__
#else
#define REFK_HOST_DEVICE
#endif

namespace refk {

// ---- half-precision storage types ----------------------------------------

REFK_HOST_DEVICE inline float bits_to_float(uint32_t w) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(w);
#else
  float f;
  std::memcpy(&f, &w, 4);
  return f;
#endif
}
REFK_HOST_DEVICE inline uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t w;
  std::memcpy(&w, &f, 4);
  return w;
#endif
}

// IEEE binary16. Conversions are exact (to float) and round to nearest even
// (from float), in branch-light integer/float arithmetic the compiler can
// vectorize (and a GPU runs as well as its own intrinsics: the same bits).
struct Half {
  uint16_t x;
  REFK_HOST_DEVICE static float to_float(uint16_t h) {
    const uint32_t w = static_cast<uint32_t>(h) << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two_w = w + w;
    const float normalized = bits_to_float((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
    const float denormalized = bits_to_float((two_w >> 17) | (126u << 23)) - 0.5f;
    const uint32_t magnitude = two_w < (1u << 27) ? float_to_bits(denormalized) : float_to_bits(normalized);
    return bits_to_float(sign | magnitude);
  }
  REFK_HOST_DEVICE static uint16_t from_float(float f) {
    float base = (std::fabs(f) * 0x1.0p+112f) * 0x1.0p-110f;
    const uint32_t w = float_to_bits(f);
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1_w & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = bits_to_float((bias >> 1) + 0x07800000u) + base;
    const uint32_t bits = float_to_bits(base);
    const uint32_t nonsign = ((bits >> 13) & 0x00007C00u) + (bits & 0x00000FFFu);
    return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
  }
};

// bfloat16: the top half of a float, rounded to nearest even; NaN stays NaN
// (the quiet NaN 0x7FC0, as c10::BFloat16 writes it).
struct BFloat16 {
  uint16_t x;
  REFK_HOST_DEVICE static float to_float(uint16_t b) { return bits_to_float(static_cast<uint32_t>(b) << 16); }
  REFK_HOST_DEVICE static uint16_t from_float(float f) {
    if (std::isnan(f)) return 0x7FC0;
    const uint32_t w = float_to_bits(f);
    return static_cast<uint16_t>((w + 0x7FFFu + ((w >> 16) & 1u)) >> 16);
  }
};

// Note [Float8 formats]: the 8-bit floating dtypes (Note [Storage dtypes]
// in RefKernels.h), converted as c10's Float8_* types convert (torch 2.13's
// torch/headeronly/util/Float8_*.h): to float exactly, from float rounded to
// nearest even (a double goes through float first, as c10's constructors
// take a float). Out of range, each format does what c10 does:
// - e4m3fn (bias 7, 3 mantissa bits, no infinity, NaN 0x7F/0xFF): NaN stays
//   NaN, anything else beyond 448 (infinity too) saturates to +-448;
// - e5m2 (bias 15, 2 bits, IEEE-like): overflow becomes +-inf, NaN NaN;
// - e4m3fnuz and e5m2fnuz (bias 8 and 16, no -0, 0x80 the one NaN): NaN,
//   infinities and overflow become NaN; a value that rounds to zero loses
//   its sign;
// - e8m0fnu (a bare exponent, bias 127, unsigned, NaN 0xFF): the exponent of
//   |f| rounded to nearest even on the mantissa (the sign is dropped, 0
//   becomes 2^-127), NaN and infinities NaN.
// The NaNs they produce in float have c10's bit patterns.

// |f| (bits w, below the format's overflow threshold) as an 8-bit magnitude
// with exponent bias B and M mantissa bits: a subnormal result through a
// float addition that lines |f| up with the format's last mantissa bit (the
// float adder rounds to nearest even), a normal one by adding half an ulp
// less one plus the kept mantissa's lowest bit before truncating.
template <uint32_t B, uint32_t M>
REFK_HOST_DEVICE inline uint32_t fp8_magnitude(uint32_t w) {
  constexpr uint32_t shift = 23 - M;
  if (w < ((128 - B) << 23)) {
    constexpr uint32_t magic = (128 - B + shift) << 23;
    return float_to_bits(bits_to_float(w) + bits_to_float(magic)) - magic;
  }
  return (w - ((127 - B) << 23) + ((1u << (shift - 1)) - 1) + ((w >> shift) & 1u)) >> shift;
}

// An 8-bit value with exponent bias B and M mantissa bits (sign in bit 7) as
// float: subnormals are m * 2^(1 - B - M), exact in float.
template <uint32_t B, uint32_t M>
REFK_HOST_DEVICE inline float fp8_to_float(uint8_t v) {
  const uint32_t sign = static_cast<uint32_t>(v & 0x80u) << 24;
  const uint32_t e = (v & 0x7Fu) >> M, m = v & ((1u << M) - 1);
  if (e == 0) {
    constexpr float scale = static_cast<float>(1.0 / static_cast<double>(1ull << (B + M - 1)));
    return bits_to_float(sign | float_to_bits(static_cast<float>(m) * scale));
  }
  return bits_to_float(sign | ((e + 127 - B) << 23) | (m << (23 - M)));
}

struct Float8E4M3FN {
  uint8_t x;
  REFK_HOST_DEVICE static float to_float(uint8_t v) {
    if ((v & 0x7Fu) == 0x7Fu) return bits_to_float((static_cast<uint32_t>(v & 0x80u) << 24) | 0x7FF00000u);
    return fp8_to_float<7, 3>(v);
  }
  REFK_HOST_DEVICE static uint8_t from_float(float f) {
    uint32_t w = float_to_bits(f);
    const uint32_t sign = w & 0x80000000u;
    w ^= sign;
    uint32_t r;
    if (w >= (1087u << 20)) {  // 480, the first value past 448 that does not round down to it
      r = w > 0x7F800000u ? 0x7Fu : 0x7Eu;
    } else {
      r = fp8_magnitude<7, 3>(w);
      if (r == 0x7Fu) r = 0x7Eu;  // rounded up into the NaN pattern: 448
    }
    return static_cast<uint8_t>(r | (sign >> 24));
  }
};

struct Float8E5M2 {
  uint8_t x;
  REFK_HOST_DEVICE static float to_float(uint8_t v) { return Half::to_float(static_cast<uint16_t>(v << 8)); }
  REFK_HOST_DEVICE static uint8_t from_float(float f) {
    uint32_t w = float_to_bits(f);
    const uint32_t sign = w & 0x80000000u;
    w ^= sign;
    const uint32_t r = w >= (143u << 23) ? (w > 0x7F800000u ? 0x7Fu : 0x7Cu) : fp8_magnitude<15, 2>(w);
    return static_cast<uint8_t>(r | (sign >> 24));
  }
};

template <uint32_t B, uint32_t M>
struct Float8Fnuz {
  uint8_t x;
  REFK_HOST_DEVICE static float to_float(uint8_t v) {
    if (v == 0x80u) return bits_to_float(0x7F800001u);
    return fp8_to_float<B, M>(v);
  }
  REFK_HOST_DEVICE static uint8_t from_float(float f) {
    uint32_t w = float_to_bits(f);
    const uint32_t sign = w & 0x80000000u;
    w ^= sign;
    if (w >= ((127 + B) << 23)) return 0x80u;
    const uint32_t r = fp8_magnitude<B, M>(w);
    return r == 0 ? uint8_t{0} : static_cast<uint8_t>(r | (sign >> 24));
  }
};
using Float8E4M3FNUZ = Float8Fnuz<8, 3>;
using Float8E5M2FNUZ = Float8Fnuz<16, 2>;

struct Float8E8M0FNU {
  uint8_t x;
  REFK_HOST_DEVICE static float to_float(uint8_t v) {
    if (v == 0) return bits_to_float(0x00400000u);
    if (v == 0xFFu) return bits_to_float(0x7F800001u);
    return bits_to_float(static_cast<uint32_t>(v) << 23);
  }
  REFK_HOST_DEVICE static uint8_t from_float(float f) {
    const uint32_t w = float_to_bits(f);
    uint32_t e = (w >> 23) & 0xFFu;
    if (e == 0xFFu) return 0xFFu;
    const bool guard = (w & 0x400000u) != 0, rest = (w & 0x3FFFFFu) != 0, odd = e > 0;  // odd: the implied 1
    if (guard && (rest || odd)) ++e;
    return static_cast<uint8_t>(e);
  }
};

// A complex element (Note [Complex dtypes] in RefKernels.h): c10::complex's
// layout. Arithmetic on it lives with the kernels that use it (cpu/Fft.cpp).
template <class R>
struct Complex {
  R re, im;
};

template <class T>
constexpr bool is_complex_v = std::is_same_v<T, Complex<float>> || std::is_same_v<T, Complex<double>>;

template <class T>
constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
template <class T>
constexpr bool is_float8_v = std::is_same_v<T, Float8E4M3FN> || std::is_same_v<T, Float8E5M2> ||
                             std::is_same_v<T, Float8E4M3FNUZ> || std::is_same_v<T, Float8E5M2FNUZ> ||
                             std::is_same_v<T, Float8E8M0FNU>;
// Storage types kept as bits and computed on as float.
template <class T>
constexpr bool is_reduced_v = is_half_v<T> || is_float8_v<T>;
template <class T>
constexpr bool is_floating_v = std::is_floating_point_v<T> || is_reduced_v<T>;
template <class T>
constexpr bool is_integral_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// The type arithmetic happens in: float for the half and float8 types (as ATen's opmath).
template <class T>
using opmath_t = std::conditional_t<is_reduced_v<T>, float, T>;

// Accumulation type of reductions: double for floating types, int64 for
// integral ones (RefKernels.h's refkReduce contract; ATen accumulates float
// in float, double only brings our results closer to the exact value).
template <class T>
using acc_t = std::conditional_t<is_floating_v<T>, double, int64_t>;

// ---- loads, stores and cast rules ------------------------------------------

template <class T>
REFK_HOST_DEVICE inline opmath_t<T> load(T v) {
  if constexpr (is_reduced_v<T>) {
    return T::to_float(v.x);
  } else {
    return v;
  }
}

// A floating value converted to integral T as ATen's CPU casts behave:
// x86's truncating conversion (cvttss2si/cvttsd2si), so -3.0 -> uint8 253
// and 300.0 -> int8 44. int32 and narrower types convert through int32,
// where NaN and values outside int32's range become INT32_MIN (x86's
// "integer indefinite"): 3e9 -> int32 -2147483648, int16 0 (eager CPU
// agrees); int64 likewise through INT64_MIN; uint32 through int64 (its low
// bits) and uint64 as x86-64's unsigned conversion (the host compiler's).
// Eager CPU's vectorized float->uint32 loop answers otherwise out of range
// (NaN -> 2^31, 5e9 -> 0), its scalar tail and strided loops as here: eager
// disagrees with itself there, and the library follows the scalar loop.
// That is the host compiler's scalar static_cast, spelled out here in
// defined C++ for every compiler: the device's conversion saturates instead,
// and a loop compiled for AVX-512 (Note [Vector width] in cpu/Common.h)
// would take the vector instruction's out-of-range answers. Defined code
// vectorizes to the same bits.
template <class T, class C>
REFK_HOST_DEVICE inline T float_to_integral(C v) {
  const auto via_int64 = [](C x) {
    const bool in_range = x >= C(-9223372036854775808.0) && x < C(9223372036854775808.0);  // false for NaN
    return in_range ? static_cast<int64_t>(x) : INT64_MIN;
  };
  if constexpr (sizeof(T) < 4 || std::is_same_v<T, int32_t>) {
    const bool in_range = v >= C(-2147483648.0) && v < C(2147483648.0);  // false for NaN
    return static_cast<T>(in_range ? static_cast<int32_t>(v) : INT32_MIN);
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    // x86-64's unsigned conversion: below 2^63 (NaN too) the signed one,
    // else the signed one of v - 2^63 with the top bit flipped back.
    if (!(v >= C(9223372036854775808.0))) return static_cast<uint64_t>(via_int64(v));
    return static_cast<uint64_t>(via_int64(v - C(9223372036854775808.0))) ^ (uint64_t{1} << 63);
  } else {
    return static_cast<T>(via_int64(v));  // int64, and uint32 (its low bits)
  }
}

// Converts an opmath (or accumulation) value to storage type T: through
// float for the half types, != 0 for bool, float_to_integral for floating
// to integral.
template <class T, class C>
REFK_HOST_DEVICE inline T store(C v) {
  if constexpr (is_reduced_v<C>) {
    return store<T>(load(v));
  } else if constexpr (is_reduced_v<T>) {
    return T{T::from_float(static_cast<float>(v))};
  } else if constexpr (std::is_same_v<T, bool>) {
    return v != C(0);
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<C>) {
    return float_to_integral<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// A fill value (refkScalar) as storage type T: floating through store,
// bool true when either field is nonzero, integers from the int64 field.
template <class T>
REFK_HOST_DEVICE inline T from_scalar(refkScalar value) {
  if constexpr (is_floating_v<T>) {
    return store<T>(value.f);
  } else if constexpr (std::is_same_v<T, bool>) {
    return value.i != 0 || value.f != 0;
  } else {
    return static_cast<T>(value.i);
  }
}

// ---- dtype dispatch --------------------------------------------------------

template <class T>
struct Tag {
  using type = T;
};

REFK_HOST_DEVICE inline int64_t itemsize(refkDtype d) {
  switch (d) {
    case refkBool:
    case refkUInt8:
    case refkInt8:
    case refkFloat8E4M3FN:
    case refkFloat8E5M2:
    case refkFloat8E4M3FNUZ:
    case refkFloat8E5M2FNUZ:
    case refkFloat8E8M0FNU: return 1;
    case refkInt16:
    case refkUInt16:
    case refkFloat16:
    case refkBFloat16: return 2;
    case refkInt32:
    case refkUInt32:
    case refkFloat32: return 4;
    case refkInt64:
    case refkUInt64:
    case refkFloat64:
    case refkComplex64: return 8;
    case refkComplex128: return 16;
  }
  return 0;
}

REFK_HOST_DEVICE inline bool is_complex(refkDtype d) { return d == refkComplex64 || d == refkComplex128; }

// Note [Storage dtypes] (RefKernels.h): only copies and fills take these.
REFK_HOST_DEVICE inline bool is_storage_only(refkDtype d) { return d >= refkUInt16 && d <= refkFloat8E8M0FNU; }

// refkErrorUnsupportedDtype, with a refkLastError text naming `d`; defined
// in common/Errors.h, which both libraries' Common headers include.
inline refkStatus unsupported_dtype(refkDtype d);

// Calls f(Tag<T>{}) with the storage type of `d` (on the host: a CUDA
// kernel launch happens inside f), for the real dtypes. A complex `d`
// returns unsupported_dtype's status when f returns a status: only the calls
// that say so take complex, through dispatch_complex (Note [Complex dtypes]).
template <class F>
decltype(auto) dispatch(refkDtype d, F&& f) {
  using R = decltype(f(Tag<bool>{}));
  if constexpr (std::is_same_v<R, refkStatus>) {
    if (is_complex(d) || is_storage_only(d)) return unsupported_dtype(d);
  }
  switch (d) {
    case refkBool: return f(Tag<bool>{});
    case refkUInt8: return f(Tag<uint8_t>{});
    case refkInt8: return f(Tag<int8_t>{});
    case refkInt16: return f(Tag<int16_t>{});
    case refkInt32: return f(Tag<int32_t>{});
    case refkInt64: return f(Tag<int64_t>{});
    case refkFloat16: return f(Tag<Half>{});
    case refkBFloat16: return f(Tag<BFloat16>{});
    case refkFloat32: return f(Tag<float>{});
    case refkFloat64: return f(Tag<double>{});
    default: break;  // complex and the storage dtypes: dispatch_complex, dispatch_storage
  }
  return f(Tag<bool>{});
}

// dispatch, and the storage dtypes too (Note [Storage dtypes]): for the
// calls that take them (copies and fills); complex stays dispatch_complex's.
template <class F>
decltype(auto) dispatch_storage(refkDtype d, F&& f) {
  switch (d) {
    case refkUInt16: return f(Tag<uint16_t>{});
    case refkUInt32: return f(Tag<uint32_t>{});
    case refkUInt64: return f(Tag<uint64_t>{});
    case refkFloat8E4M3FN: return f(Tag<Float8E4M3FN>{});
    case refkFloat8E5M2: return f(Tag<Float8E5M2>{});
    case refkFloat8E4M3FNUZ: return f(Tag<Float8E4M3FNUZ>{});
    case refkFloat8E5M2FNUZ: return f(Tag<Float8E5M2FNUZ>{});
    case refkFloat8E8M0FNU: return f(Tag<Float8E8M0FNU>{});
    default: return dispatch(d, static_cast<F&&>(f));
  }
}

// Calls f(Tag<I>{}) with the storage type of an index dtype (int32 or int64).
template <class F>
decltype(auto) dispatch_index(refkDtype d, F&& f) {
  if (d == refkInt32) return f(Tag<int32_t>{});
  return f(Tag<int64_t>{});
}

// A complex128 element's 16 bytes, moved as one value.
struct Bytes16 {
  uint64_t lo, hi;
};

// Calls f(Tag<E>{}) with an unsigned type of the dtype's size (Bytes16 for
// complex128): moving elements by index needs only their bytes, so every
// dtype, complex included, takes the byte movers (Note [Complex dtypes]).
template <class F>
decltype(auto) dispatch_bytes(refkDtype d, F&& f) {
  switch (itemsize(d)) {
    case 1: return f(Tag<uint8_t>{});
    case 2: return f(Tag<uint16_t>{});
    case 4: return f(Tag<uint32_t>{});
    case 16: return f(Tag<Bytes16>{});
    default: return f(Tag<uint64_t>{});
  }
}

// dispatch over the two complex dtypes: f(Tag<Complex<float>>) or
// f(Tag<Complex<double>>); `d` must be complex.
template <class F>
decltype(auto) dispatch_complex(refkDtype d, F&& f) {
  if (d == refkComplex128) return f(Tag<Complex<double>>{});
  return f(Tag<Complex<float>>{});
}

}  // namespace refk
