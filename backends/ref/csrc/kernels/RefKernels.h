// The reference kernel library: the C ABI a vendor's kernel SDK offers
// (aclnn for Ascend, cuDNN/cuBLAS-style libraries). The ATen glue
// (csrc/aten/) decides everything PyTorch defines — argument checks, result
// dtype and shape, broadcasting, allocation — and hands this library plain
// descriptors of memory it already owns. The library only computes.
//
// Plain C types, no torch headers: cpu/ implements it with threaded loops,
// and a CUDA implementation of the same header runs the same calls as
// kernels on the given stream.
//
// Note [Descriptor conventions]:
// - `data` points at element [0, ..., 0]; strides are in elements and may be
//   0 (broadcast) or negative (flip). Dimensions of size 1 may carry any stride.
// - Every elementwise call gets operands already broadcast to the output's
//   shape (stride 0 where an operand is broadcast) and, unless the call says
//   otherwise, inputs of one dtype: the glue casts mixed inputs first, the
//   library never promotes.
// - Outputs never overlap inputs partially: the glue makes a temporary when
//   they would (ATen's "unsupported operation: some elements of the input
//   tensor and the written-to tensor refer to a single memory location").
// - Calls return refkSuccess or an error whose text refkLastError() gives
//   (per thread); a dtype a call does not support is an error, not UB.
#pragma once

#include <stdint.h>

#include "driver/RefDriver.h"

#ifdef __cplusplus
extern "C" {
#endif

#define REFK_MAX_DIMS 25

typedef enum refkStatus {
  refkSuccess = 0,
  refkErrorInvalidValue = 1,
  refkErrorUnsupportedDtype = 2,
  refkErrorNotImplemented = 3,
} refkStatus;

typedef enum refkDtype {
  refkBool = 0,
  refkUInt8 = 1,
  refkInt8 = 2,
  refkInt16 = 3,
  refkInt32 = 4,
  refkInt64 = 5,
  refkFloat16 = 6,
  refkBFloat16 = 7,
  refkFloat32 = 8,
  refkFloat64 = 9,
} refkDtype;

typedef struct refkTensor {
  void* data;
  refkDtype dtype;
  int32_t ndim;
  int64_t sizes[REFK_MAX_DIMS];
  int64_t strides[REFK_MAX_DIMS];
} refkTensor;

// A scalar argument: integral ops read `i`, floating ops read `f` (the glue
// fills both from the same value).
typedef struct refkScalar {
  double f;
  int64_t i;
} refkScalar;

// Where and how to run: the stream of the current device and how many host
// threads the CPU library may use (the glue passes torch's setting).
typedef struct refkContext {
  refStream_t stream;
  int32_t num_threads;
} refkContext;

const char* refkLastError(void);

// dst[i] = (dst.dtype) src[i]: any dtypes, any strides (the dtype cast of
// .to(), copy_, clone, contiguous, cat into slices, flip, pad, repeat...).
refkStatus refkCopy(const refkContext* ctx, const refkTensor* dst, const refkTensor* src);
refkStatus refkFill(const refkContext* ctx, const refkTensor* dst, refkScalar value);

typedef enum refkUnaryOp {
  // same dtype in and out
  refkAbs, refkNeg, refkSign, refkSgn, refkCeil, refkFloor, refkRound, refkTrunc, refkFrac,
  refkExp, refkExp2, refkExpm1, refkLog, refkLog2, refkLog10, refkLog1p,
  refkSin, refkCos, refkTan, refkAsin, refkAcos, refkAtan, refkSinh, refkCosh, refkTanh,
  refkAsinh, refkAcosh, refkAtanh, refkErf, refkErfc, refkSqrt, refkRsqrt, refkReciprocal,
  refkSigmoid, refkRelu, refkGeluNone, refkGeluTanh, refkElu, refkHardtanh, refkLeakyRelu,
  refkBitwiseNot, refkSilu, refkHardsigmoid, refkHardswish, refkSoftplus, refkMish, refkSquare,
  // bool out
  refkIsNan, refkIsInf, refkIsPosInf, refkIsNegInf, refkIsFinite, refkLogicalNot,
  refkSignbit,
} refkUnaryOp;

// Parameters of parametrised unary ops: elu (p0 alpha, p1 scale, p2
// input_scale), hardtanh (p0 min, p1 max), leaky_relu (p0 slope), round
// (decimals in `i`), softplus (p0 beta, p1 threshold).
typedef struct refkUnaryParams {
  double p0, p1, p2;
  int64_t i;
} refkUnaryParams;

refkStatus refkUnary(const refkContext* ctx, refkUnaryOp op, const refkTensor* out, const refkTensor* in,
                     const refkUnaryParams* params);

typedef enum refkBinaryOp {
  // same dtype in and out
  refkAdd,  // a + alpha * b
  refkSub,  // a - alpha * b
  refkMul, refkDiv, refkDivTrunc, refkDivFloor, refkFmod, refkRemainder, refkPow, refkAtan2,
  refkMaximum, refkMinimum, refkFmax, refkFmin, refkBitwiseAnd, refkBitwiseOr, refkBitwiseXor,
  refkLshift, refkRshift, refkHypot, refkCopysign, refkXlogy, refkLogaddexp,
  // bool out
  refkEq, refkNe, refkLt, refkLe, refkGt, refkGe, refkLogicalAnd, refkLogicalOr, refkLogicalXor,
} refkBinaryOp;

refkStatus refkBinary(const refkContext* ctx, refkBinaryOp op, const refkTensor* out, const refkTensor* a,
                      const refkTensor* b, refkScalar alpha);

// out = cond ? a : b (cond bool; a, b, out one dtype).
refkStatus refkWhere(const refkContext* ctx, const refkTensor* out, const refkTensor* cond, const refkTensor* a,
                     const refkTensor* b);
// out = min(max(in, lo), hi), NaN-propagating; lo/hi broadcast, absent when data is NULL.
refkStatus refkClamp(const refkContext* ctx, const refkTensor* out, const refkTensor* in, const refkTensor* lo,
                     const refkTensor* hi);

typedef enum refkReduceOp {
  refkSum, refkProd, refkMean, refkAmax, refkAmin, refkAny, refkAll, refkVar, refkNansum,
} refkReduceOp;

// out[k] = op over the trailing `nreduce` dims of `in` (in.ndim = out.ndim +
// nreduce; the glue permutes reduced dims last). Floating inputs accumulate
// in double, integers in int64; `out` may have another dtype (sum of int32
// into int64, any into bool). refkVar reads `correction` from param.f.
refkStatus refkReduce(const refkContext* ctx, refkReduceOp op, const refkTensor* out, const refkTensor* in,
                      int32_t nreduce, refkScalar param);

// Values and int64 indices of the max/min over the trailing dim of `in`
// (first occurrence; NaN wins, as in ATen). `values` may have data NULL.
refkStatus refkArgReduce(const refkContext* ctx, int32_t is_max, const refkTensor* values,
                         const refkTensor* indices, const refkTensor* in);

// Inclusive cumulative sum along the trailing dim (out and in same shape).
refkStatus refkCumsum(const refkContext* ctx, const refkTensor* out, const refkTensor* in);

// Index ops along `dim`. index tensors are int64.
// gather:  out[.., i, ..] = in[.., index[.., i, ..], ..]   (out, index same shape)
refkStatus refkGather(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                      const refkTensor* index);
typedef enum refkScatterReduce { refkScatterAssign, refkScatterAdd, refkScatterMultiply } refkScatterReduce;
// self[.., index[.., i, ..], ..] (op)= src[.., i, ..] over index's shape; src
// may have data NULL, then `value` is scattered.
refkStatus refkScatter(const refkContext* ctx, const refkTensor* self, int32_t dim, const refkTensor* index,
                       const refkTensor* src, refkScalar value, refkScatterReduce reduce);
// out.select(dim, i) = in.select(dim, index[i]).
refkStatus refkIndexSelect(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                           const refkTensor* index);

// Random numbers from a counter-based generator (Philox-4x32-10): element i
// draws from counter (offset + i / 4 ... ), so a GPU thread per element
// computes the same stream. Note [Philox offsets] in the runtime explains
// how seeds and offsets are reserved.
typedef enum refkDistribution { refkUniform, refkNormal, refkBernoulli } refkDistribution;
refkStatus refkRandom(const refkContext* ctx, refkDistribution dist, const refkTensor* out, uint64_t seed,
                      uint64_t offset, double a, double b);

// C = beta * C + alpha * A @ B with A (m x k), B (k x n), C (m x n), any
// strides, batched over a leading dim when ndim == 3.
refkStatus refkGemm(const refkContext* ctx, const refkTensor* c, const refkTensor* a, const refkTensor* b,
                    refkScalar alpha, refkScalar beta);

// ---- tensor manipulation and random
// (cat, pad, flip, repeat, the scatters and the views need no call of their
// own: they are refkCopy/refkFill over descriptors of slices, negative
// strides and stride-0 dims, Note [Descriptor conventions].)

// out[i] = start + i * step over a 1-d out, computed as ATen's CPU arange
// does: in double for float32/float64, in float for float16/bfloat16
// (start.f, step.f), in int64 wrapping to the dtype for integers (start.i,
// step.i). bool is unsupported.
refkStatus refkArange(const refkContext* ctx, const refkTensor* out, refkScalar start, refkScalar step);

// A uniformly random permutation of 0 .. n-1 into a 1-d out of any
// non-bool dtype (n = out's size). Note [Random permutations by sorting
// keys] in cpu/Random.cpp: element i's 64-bit key comes from counter
// offset + i / 2 (two words each), and the permutation is the order of
// (key, i); reserve 2 * n words.
refkStatus refkRandperm(const refkContext* ctx, const refkTensor* out, uint64_t seed, uint64_t offset);

// Dropout: mask[i] = u_i < keep, out[i] = in[i] * mask[i] * scale (NaN *
// 0 stays NaN, as ATen's input.mul(mask).mul_(scale)); u_i is refkRandom's
// uniform word for element i (row-major), so mask equals refkRandom's
// Bernoulli(keep) fill with the same seed and offset. out and in one
// floating dtype, mask bool, all of one shape, any strides.
refkStatus refkDropout(const refkContext* ctx, const refkTensor* out, const refkTensor* mask, const refkTensor* in,
                       double keep, double scale, uint64_t seed, uint64_t offset);

#ifdef __cplusplus
}  // extern "C"
#endif
