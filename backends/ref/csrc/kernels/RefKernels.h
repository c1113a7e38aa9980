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
  refkErrorIndexOutOfBounds = 4,  // Note [Index errors]
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
  // Note [Complex dtypes]: interleaved (real, imag) pairs of float32 or
  // float64 (C99's float _Complex layout, as c10::complex). The calls that
  // take them:
  //  - refkCopy (casts to and from every other dtype of the library, the
  //    imaginary part dropped as c10's casts drop it) and refkFill (a real
  //    value, as (value, 0); the glue fills a complex one part by part);
  //  - the byte movers, which dispatch on element size and not on the
  //    dtype: refkGather, refkIndexSelect, refkIndex, refkMaskedScatter,
  //    refkWhere (and so flip, cat, masked_fill, which the glue builds on
  //    copies and refkWhere);
  //  - refkScatter's assignment (src, or a real value) and its sum with
  //    include_self; its other reductions refuse;
  //  - refkBinary's refkAdd, refkSub, refkMul, refkDiv, refkEq and refkNe
  //    (common/Complex.h; the CPU library only, the CUDA one refuses);
  //  - refkFft.
  // Every other call answers refkErrorUnsupportedDtype. complex32 has no
  // dtype here: the glue refuses it. backend.yaml's partial_dtypes: lists
  // the operators whose glue admits complex, which `opgen-backend test`
  // runs in complex64/complex128.
  refkComplex64 = 10,
  refkComplex128 = 11,
  // Note [Storage dtypes]: the unsigned integers wider than a byte and the
  // 8-bit floating formats (float8_e4m3fn, float8_e5m2, their fnuz
  // variants, float8_e8m0fnu; common/Dtypes.h converts them as c10 does).
  // Only refkCopy and refkFill take them, as eager CPU's copies, casts,
  // fills and cat do; the glue compares them (eq, ne) in a wider dtype the
  // library computes in. Every other call answers refkErrorUnsupportedDtype.
  refkUInt16 = 12,
  refkUInt32 = 13,
  refkUInt64 = 14,
  refkFloat8E4M3FN = 15,
  refkFloat8E5M2 = 16,
  refkFloat8E4M3FNUZ = 17,
  refkFloat8E5M2FNUZ = 18,
  refkFloat8E8M0FNU = 19,
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
// A real value becomes (value, 0); a complex one cast to a real dtype keeps
// its real part (as c10's static_cast_with_inter_type). refkFill's value
// fills complex elements as (value.f, 0). Both take the storage dtypes
// (Note [Storage dtypes]): a float8 value converts through float, an
// unsigned one fills from value.i's bits.
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

// The gradient of refkUnary's activation `op` (refkSilu, refkMish,
// refkSoftplus and refkHardtanh with refkUnary's params, refkHardsigmoid,
// refkHardswish):
// grad_in = grad * d op(x) / dx, with ATen's CPU backward formulas
// (common/Pointwise.h) in opmath. grad_in, grad and x of one floating dtype
// and shape; another op is refkErrorNotImplemented.
refkStatus refkUnaryBackward(const refkContext* ctx, refkUnaryOp op, const refkTensor* grad_in,
                             const refkTensor* grad, const refkTensor* x, const refkUnaryParams* params);

typedef enum refkBinaryOp {
  // same dtype in and out
  refkAdd,  // a + alpha * b
  refkSub,  // a - alpha * b
  refkMul, refkDiv, refkDivTrunc, refkDivFloor, refkFmod, refkRemainder, refkPow, refkAtan2,
  refkMaximum, refkMinimum, refkFmax, refkFmin, refkBitwiseAnd, refkBitwiseOr, refkBitwiseXor,
  refkLshift, refkRshift, refkHypot, refkCopysign, refkXlogy, refkLogaddexp,
  // bool out
  refkEq, refkNe, refkLt, refkLe, refkGt, refkGe, refkLogicalAnd, refkLogicalOr, refkLogicalXor,
  // activation backwards, same dtype in and out: a is the incoming gradient,
  // b the forward's input (threshold, gelu) or output (sigmoid, tanh)
  refkThresholdBackward,  // b <= alpha ? 0 : a (alpha: the threshold)
  refkGeluBackwardNone, refkGeluBackwardTanh, refkSigmoidBackward, refkTanhBackward,
} refkBinaryOp;

refkStatus refkBinary(const refkContext* ctx, refkBinaryOp op, const refkTensor* out, const refkTensor* a,
                      const refkTensor* b, refkScalar alpha);

// out = cond ? a : b (cond bool; a, b, out one dtype).
refkStatus refkWhere(const refkContext* ctx, const refkTensor* out, const refkTensor* cond, const refkTensor* a,
                     const refkTensor* b);
// out = min(max(in, lo), hi), NaN-propagating; lo/hi broadcast, absent when data is NULL.
refkStatus refkClamp(const refkContext* ctx, const refkTensor* out, const refkTensor* in, const refkTensor* lo,
                     const refkTensor* hi);

// The ternary pointwise ops (Tensor.addcmul_, addcdiv_ and lerp_, what
// torch.optim's single-tensor path calls): out = op(self, a, b, value)
// elementwise, operands broadcast to out's shape and all of out's dtype, in
// opmath (float for float16/bfloat16) rounded once, by the formulas of
// common/Pointwise.h that refkForeach's addcmul, addcdiv and lerp share.
typedef enum refkTernaryOp {
  refkAddcmul,  // self + value * a * b; any dtype but bool (integers take value.i and wrap)
  refkAddcdiv,  // self + value * a / b; floating dtypes
  refkLerp,     // lerp(self, a, w) (ATen's two-sided form), w = b, or value.f where b's data is NULL; floating
} refkTernaryOp;
refkStatus refkTernary(const refkContext* ctx, refkTernaryOp op, const refkTensor* out, const refkTensor* self,
                       const refkTensor* a, const refkTensor* b, refkScalar value);

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

// Note [Histogram semantics]: counts of `in`'s elements in `out.sizes[0]`
// equal bins over [lo, hi] (out 1-d, of in's dtype; the glue has resolved
// the bounds: lo < hi, finite). An element x outside [lo, hi] (or NaN)
// counts nowhere; bin = trunc((x - lo) * bins / (hi - lo)), the last bin
// taking x == hi. How that is computed follows the device each dtype's
// callers expect:
// - floating dtypes as ATen's CPU histc (LINEAR_INTERPOLATION): lo.f and
//   hi.f rounded to the dtype and every operation in the dtype itself
//   (float16/bfloat16 round after each), counts exact (ATen's half counts
//   saturate past 2048 per bin per thread; these do not);
// - integer dtypes as ATen's CUDA histc (what transformers' MoE calls):
//   lo.i and hi.i and the arithmetic in int64 (integer division), counts
//   wrapping to the dtype as CUDA's atomic adds do.
// bool is unsupported.
refkStatus refkHistc(const refkContext* ctx, const refkTensor* out, const refkTensor* in, refkScalar lo,
                     refkScalar hi);

// Random numbers from a counter-based generator (Philox-4x32-10): element i
// draws from counter (offset + i / 4 ... ), so a GPU thread per element
// computes the same stream. Note [Philox offsets] in the runtime explains
// how seeds and offsets are reserved.
typedef enum refkDistribution { refkUniform, refkNormal, refkBernoulli } refkDistribution;
refkStatus refkRandom(const refkContext* ctx, refkDistribution dist, const refkTensor* out, uint64_t seed,
                      uint64_t offset, double a, double b);

// ---- linear algebra and convolution

// C = beta * C + alpha * A @ B with A (m x k), B (k x n), C (m x n), any
// strides (transposes are strides), batched over a leading dim when ndim ==
// 3 (a stride-0 batch dim shares one operand). All of one dtype, not bool;
// float16/bfloat16 accumulate in float and round once, integers wrap.
// beta == 0 never reads C (NaN there does not propagate), as BLAS.
refkStatus refkGemm(const refkContext* ctx, const refkTensor* c, const refkTensor* a, const refkTensor* b,
                    refkScalar alpha, refkScalar beta);

// Note [Convolution as GEMM]: a convolution relates an image (N, C, *img)
// and a grid (N, C', *grid): grid position o reads image position
// o * stride - padding + k * dilation for every kernel offset k, zero
// outside the image. im2col lays the image out as a column matrix
// col (N, C * K, L) (K = kernel offsets, L = grid positions; row c * K + k,
// offsets and positions row-major), so the forward convolution is the GEMM
// weight (C', C * K) @ col per group; col2im is its adjoint (the gradient
// of the input, and the transposed convolution's forward). The glue runs
// every convolution and its gradients as these two calls and refkGemm.
typedef struct refkConvGeometry {
  int32_t spatial;  // 1, 2 or 3
  int64_t grid[3], kernel[3], stride[3], padding[3], dilation[3];
} refkConvGeometry;

// col = im2col(im): im (N, C, *img) and col (N, C * K, L) of one dtype, any strides.
refkStatus refkConvIm2col(const refkContext* ctx, const refkTensor* col, const refkTensor* im,
                          const refkConvGeometry* geometry);
// im = col2im(col): every image element is the sum of the column entries
// that read it (zero if none), added in the dtype in kernel-offset order.
// Not bool.
refkStatus refkConvCol2im(const refkContext* ctx, const refkTensor* im, const refkTensor* col,
                          const refkConvGeometry* geometry);

// p-norm distances between rows, summed in double: p = 0 counts the
// differing elements, p = inf takes the largest difference (NaN wins).
// cdist: out[b, i, j] = || x1[b, i, :] - x2[b, j, :] || with out (B, P, R),
// x1 (B, P, M), x2 (B, R, M). pdist: out (N * (N - 1) / 2) over the row
// pairs i < j of x (N, M) in row-major order. float32 and float64.
refkStatus refkCdist(const refkContext* ctx, const refkTensor* out, const refkTensor* x1, const refkTensor* x2,
                     double p);
refkStatus refkPdist(const refkContext* ctx, const refkTensor* out, const refkTensor* x, double p);

// Weight normalization (torch.nn.utils.weight_norm, ATen's
// _weight_norm_interface) along dim `dim` of v: for each index j of that
// dim, norm[j] = sqrt(sum of v^2 over every other dim) and w = v * g[j] /
// norm[j]. v and w of one shape and floating dtype; g (of v's dtype) and
// norm (v's dtype, or float32 for float16/bfloat16 v, as ATen) hold
// v.size(dim) elements each, as 1-d descriptors. Sums accumulate in double.
refkStatus refkWeightNorm(const refkContext* ctx, const refkTensor* w, const refkTensor* norm, const refkTensor* v,
                          const refkTensor* g, int32_t dim);
// Its gradients from grad_w (v's shape) and the forward's v, g, norm: with
// s[j] = sum(grad_w * v) over slice j, grad_g[j] = s[j] / norm[j] and
// grad_v = (g[j] / norm[j]) * grad_w - (g[j] * s[j] / norm[j]^3) * v.
refkStatus refkWeightNormBackward(const refkContext* ctx, const refkTensor* grad_v, const refkTensor* grad_g,
                                  const refkTensor* grad_w, const refkTensor* v, const refkTensor* g,
                                  const refkTensor* norm, int32_t dim);

// ---- tensor manipulation and random
// (cat, pad, flip, repeat, the scatters and the views need no call of their
// own: they are refkCopy/refkFill over descriptors of slices, negative
// strides and stride-0 dims, Note [Descriptor conventions].)

// tril/triu: out[.., i, j] = in[.., i, j] where the element is on the kept
// side of diagonal k (j - i <= k for the lower triangle, j - i >= k for the
// upper one), else zero, over the trailing two dims (ndim >= 2). Any dtype,
// out and in of one dtype and shape; out may be in (in place).
refkStatus refkTriangle(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int64_t diagonal,
                        int32_t upper);

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

// ---- indexing and sorting
//
// Note [Index errors]: index tensors are int32 or int64. An index outside
// its dimension fails the call with refkErrorIndexOutOfBounds, and
// refkLastError() then reads exactly "index <i> is out of bounds for
// dimension <d> with size <n>" (ATen's text; each call says what <d> is) for
// one offending element (the CPU library: the first in its order of the
// elements, whatever the threads did). The glue re-raises it with
// the error class eager uses for the op (IndexError for indexing,
// RuntimeError for gather and scatter). Outputs are unspecified after an
// error.

// out[.., i, ..] = in[.., index[.., i, ..], ..] along `dim`, over index's
// shape (out has it too; index.size(d) <= in.size(d) for d != dim). Indices
// lie in [0, in.size(dim)); <d> is `dim`.
refkStatus refkGather(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                      const refkTensor* index);

typedef enum refkScatterReduce {
  refkScatterAssign, refkScatterAdd, refkScatterMultiply, refkScatterMean, refkScatterAmax, refkScatterAmin,
} refkScatterReduce;
// In place: self[.., index[.., i, ..], ..] (op)= src[.., i, ..] along `dim`,
// over index's shape (index.size(d) <= src.size(d), and <= self.size(d) for
// d != dim); with src's data NULL, `value` (already of self's dtype) is
// scattered instead. Every element combines what lands on it in ascending
// i, so results are deterministic; float16/bfloat16 accumulate in float and
// round once, integers wrap, bool adds as "or" and multiplies as "and"; amax
// and amin propagate NaN. include_self == 0: an element that receives values
// starts from the reduction's identity instead of its own value. Mean
// divides by the number of values combined (self included when it is),
// counted in self's dtype as ATen does, floor division for integers; an
// element that receives nothing keeps its value. <d> is `dim`.
refkStatus refkScatter(const refkContext* ctx, const refkTensor* self, int32_t dim, const refkTensor* index,
                       const refkTensor* src, refkScalar value, refkScatterReduce reduce, int32_t include_self);

// out.select(dim, j) = in.select(dim, index[j]) for a 1-d or 0-d index.
// Every index is checked against in.size(dim) before anything is copied,
// also when out is empty; <d> is `dim`.
refkStatus refkIndexSelect(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                           const refkTensor* index);

// Advanced indexing (x[i0, i1, ...]) in ATen's TensorIterator form: `in` is
// described with out's shape and stride 0 over the dims the indices span,
// and the `nindices` index tensors are broadcast to out's shape. Then
// out[p] = in[p + sum_k v_k(p) * strides[k]] (strides in elements of `in`)
// where v_k(p) = indices[k][p], plus sizes[k] when negative; an index lies in
// [-sizes[k], sizes[k]); <d> is k.
refkStatus refkIndex(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t nindices,
                     const refkTensor* indices, const int64_t* sizes, const int64_t* strides);
// Its inverse, in place: self[p + sum_k v_k(p) * strides[k]] = values[p],
// with self described with values' shape as `in` above and values broadcast
// to it; where indices repeat, the last p in row-major order wins (when the
// CPU library runs on one thread; on more, as in ATen, any may). accumulate
// != 0 adds instead, one element after the other in row-major order and in
// self's own precision (as ATen's CPU index_put_).
refkStatus refkIndexPut(const refkContext* ctx, const refkTensor* self, const refkTensor* values, int32_t nindices,
                        const refkTensor* indices, const int64_t* sizes, const int64_t* strides, int32_t accumulate);

// Sorts every slice along the trailing dim of `in` into `values` (in's
// dtype) and int64 `indices` (positions in the slice), ascending or
// descending, NaN largest, -0.0 equal to 0.0. stable != 0 keeps equal
// elements in input order; otherwise their order is the library's (the CPU
// library's is ATen's CPU sort's: std::sort's, or stable for 1-d integer
// tensors of 32768 elements or more sorted ascending, fbgemm's radix sort).
refkStatus refkSort(const refkContext* ctx, const refkTensor* values, const refkTensor* indices,
                    const refkTensor* in, int32_t descending, int32_t stable);

// The k largest (largest != 0) or smallest elements of every slice along the
// trailing dim of `in`, NaN largest, into values and int64 indices whose
// trailing size is k; sorted != 0 orders them (largest first when largest).
// Which of equal elements are picked, and their order, is the library's (the
// CPU library: as ATen's CPU topk).
refkStatus refkTopk(const refkContext* ctx, const refkTensor* values, const refkTensor* indices,
                    const refkTensor* in, int64_t k, int32_t largest, int32_t sorted);

// The number of nonzero elements of `in` (NaN counts, -0.0 does not) into
// `count`, an int64 0-d tensor: the glue reads it back through the driver
// to size refkNonzero's result.
refkStatus refkCountNonzero(const refkContext* ctx, const refkTensor* count, const refkTensor* in);
// The coordinates of the nonzero elements of `in` in row-major order into
// out (n x in.ndim, int64, n from refkCountNonzero).
refkStatus refkNonzero(const refkContext* ctx, const refkTensor* out, const refkTensor* in);

// out[p] = source[k] where p is the k-th true element of `mask` (bool,
// broadcast to out's shape) in row-major order, source read in its own
// row-major order; out elsewhere keeps its values. Fails with
// refkErrorInvalidValue, "Number of elements of source < number of ones in
// mask", when source has fewer elements than mask has true ones.
refkStatus refkMaskedScatter(const refkContext* ctx, const refkTensor* out, const refkTensor* mask,
                             const refkTensor* source);

// ---- normalization and softmax
//
// Row kernels (Note [Row kernels] in cpu/Common.h): every result is
// normalized over one row (a softmax dim, a layer-norm row, a group, a
// batch-norm channel). Inputs are floating; float16 and bfloat16 compute in
// float; row statistics accumulate in double (float lanes, double totals);
// variances are biased and two-pass. Statistics and parameters (mean, rstd,
// weight, bias, running stats) may have another floating dtype than the rows
// (float32 weights of a bfloat16 input, as ATen's mixed-dtype norms); a
// parameter whose data is NULL is absent (weight all ones, bias zeros).

// out = softmax(in) along `dim` (log != 0: log_softmax, computed as
// (x - max) - log(sum(exp(x - max))), where a float16/bfloat16 in rounds the
// sum to its dtype when dim is the last, as ATen's CPU kernel), any strides.
// out has in's dtype, or float32 for a float16 in (CUDA's half_to_float).
refkStatus refkSoftmax(const refkContext* ctx, const refkTensor* out, const refkTensor* in, int32_t dim,
                       int32_t log);
// Its gradient along `dim` from grad (of the result) and out (the result):
// softmax: out * (grad - sum(grad * out)); log: grad - exp(out) * sum(grad).
// grad and out share a dtype; grad_in has it too, or float16 for float32
// grad and out (half_to_float's gradient).
refkStatus refkSoftmaxBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad,
                               const refkTensor* out, int32_t dim, int32_t log);

// Layer norm over the rows of 2-d in, out (M x N, any strides):
// mean[m], rstd[m] (1-d, M) = the row's mean and 1 / sqrt(var + eps),
// out = (in - mean) * rstd * weight + bias with weight, bias of N elements.
refkStatus refkLayerNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* mean,
                         const refkTensor* rstd, const refkTensor* in, const refkTensor* weight,
                         const refkTensor* bias, double eps);
// Its gradients from grad (M x N) and the forward's in, mean, rstd, weight:
// grad_in (M x N), grad_weight and grad_bias (N); each is computed only when
// its data is not NULL.
refkStatus refkLayerNormBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad_weight,
                                 const refkTensor* grad_bias, const refkTensor* grad, const refkTensor* in,
                                 const refkTensor* mean, const refkTensor* rstd, const refkTensor* weight);

// Group norm of 3-d in, out (N x C x HxW, any strides) in `groups` groups of
// C / groups channels: mean, rstd (2-d, N x groups) over each group's
// elements; out = (in - mean) * rstd * weight[c] + bias[c] (C elements).
refkStatus refkGroupNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* mean,
                         const refkTensor* rstd, const refkTensor* in, const refkTensor* weight,
                         const refkTensor* bias, int64_t groups, double eps);
// Its gradients, as refkLayerNormBackward's (grad_weight, grad_bias: C).
refkStatus refkGroupNormBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad_weight,
                                 const refkTensor* grad_bias, const refkTensor* grad, const refkTensor* in,
                                 const refkTensor* mean, const refkTensor* rstd, const refkTensor* weight,
                                 int64_t groups);

// Batch norm of 3-d in, out (N x C x L, any strides: contiguous or channels
// last) per channel c. training != 0: the channel's batch mean and
// 1 / sqrt(var + eps) go to save_mean, save_invstd (C), and running_mean,
// running_var (C; data NULL when absent) become (1 - momentum) * r +
// momentum * stat, with the unbiased variance. Otherwise the running stats
// normalize and save_* are not written. out = (in - mean) * invstd *
// weight + bias, as in * scale + shift.
refkStatus refkBatchNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* save_mean,
                         const refkTensor* save_invstd, const refkTensor* in, const refkTensor* weight,
                         const refkTensor* bias, const refkTensor* running_mean, const refkTensor* running_var,
                         int32_t training, double momentum, double eps);
// Its gradients from grad (N x C x L): with training, through the batch
// statistics save_mean, save_invstd; otherwise with the running stats as
// constants (grad_in = grad * weight / sqrt(running_var + eps)).
// grad_weight = sum(grad * (in - mean)) * invstd, grad_bias = sum(grad); each
// output is computed only when its data is not NULL.
refkStatus refkBatchNormBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad_weight,
                                 const refkTensor* grad_bias, const refkTensor* grad, const refkTensor* in,
                                 const refkTensor* weight, const refkTensor* running_mean,
                                 const refkTensor* running_var, const refkTensor* save_mean,
                                 const refkTensor* save_invstd, int32_t training, double eps);

// ---- pooling and resampling
//
// Note [Spatial dims]: these calls see an operand as (plane dims...,
// spatial dims...): the trailing `nspatial` (1 to 3) dims are spatial, every
// leading dim indexes independent planes (N and C, or C alone), and all
// operands of a call share the plane dims' sizes. Strides are arbitrary, so a
// channels-last tensor is the same call with other strides (the CPU library
// then runs its inner loop over C). Per-dim parameters come in arrays of 3,
// for the spatial dims in order; entries past nspatial are ignored.

typedef enum refkPoolMode {
  refkPoolMax,          // max over the window (dilated); NaN wins, the last NaN's index
  refkPoolAvg,          // mean over the window (padding, ceil mode, divisor as avg_pool)
  refkPoolAdaptiveAvg,  // mean over [floor(o*in/out), ceil((o+1)*in/out)) per dim
} refkPoolMode;

typedef struct refkPoolParams {
  int32_t nspatial;
  int64_t kernel[3], stride[3], padding[3], dilation[3];  // unused by adaptive pooling
  int32_t count_include_pad;  // avg: padded positions count in the divisor
  int64_t divisor;            // avg: nonzero overrides the divisor
} refkPoolParams;

// out = pool(in) over windows of the spatial dims. refkPoolMax also writes
// int64 `indices` (out's shape): the max's flat position in its input plane
// (row-major over the spatial dims), the window's first position when no
// element beats -inf; ties keep the first, NaN takes over (as ATen's CPU
// kernel). Averages sum in float for half types (int64 in int64, divided
// with truncation) and divide by the window's element count (the padded
// count with count_include_pad, or `divisor`); an empty window gives 0;
// adaptive averages divide by each dim's window length in turn (over three
// spatial dims, float16/bfloat16 sum and divide in their own precision, as
// ATen's CPU adaptive_avg_pool3d).
refkStatus refkPool(const refkContext* ctx, refkPoolMode mode, const refkTensor* out, const refkTensor* indices,
                    const refkTensor* in, const refkPoolParams* params);

// The gradient of refkPool: grad_in (in's shape) from grad_out (out's
// shape). refkPoolMax adds every grad_out element to grad_in at its index
// (in output order per plane; grad_in starts at zero); the averages give
// each input element the sum, in output order, of grad_out / divisor over
// the windows that contain it (float16/bfloat16 round every division and
// addition to the type, as ATen's CPU kernels). All of one floating dtype
// (int64 too for refkPoolAvg).
refkStatus refkPoolBackward(const refkContext* ctx, refkPoolMode mode, const refkTensor* grad_in,
                            const refkTensor* grad_out, const refkTensor* indices, const refkPoolParams* params);

typedef enum refkPadMode { refkPadReflect, refkPadReplicate } refkPadMode;

// out[.., o] = in[.., src(o - before)] per spatial dim, where src reflects
// (without repeating the edge) or clamps an index outside [0, in size);
// `before` may be negative (cropping). Any dtype, out and in alike.
refkStatus refkPad(const refkContext* ctx, refkPadMode mode, const refkTensor* out, const refkTensor* in,
                   int32_t nspatial, const int64_t* before);

// The gradient of refkPad: grad_in (in's shape) gets, per element, the sum
// of the grad_out elements that read it, added per plane in output order in
// the dtype itself (as ATen's CPU kernel). Floating dtypes.
refkStatus refkPadBackward(const refkContext* ctx, refkPadMode mode, const refkTensor* grad_in,
                           const refkTensor* grad_out, int32_t nspatial, const int64_t* before);

typedef enum refkUpsampleMode { refkUpsampleNearest, refkUpsampleLinear } refkUpsampleMode;

// Resizes the spatial dims of `in` to out's, as ATen's upsample_nearest*d
// (floor(o * scale), scale = 1/scales[d] when scales[d] > 0, else in/out,
// in float) and upsample_{bi,tri}linear*d (source index and weights as
// ATen's area_pixel_compute_source_index, computed in float for half types,
// align_corners as ATen; uint8 as ATen's fixed-point resize: int16 weights,
// one dim at a time from the innermost, each pass rounded to uint8). out and
// in one dtype.
refkStatus refkUpsample(const refkContext* ctx, refkUpsampleMode mode, const refkTensor* out, const refkTensor* in,
                        int32_t nspatial, int32_t align_corners, const double* scales);
// The gradient of refkUpsample (floating dtypes): every grad_out element
// adds weight * grad_out to the inputs it read, per plane in output order,
// as ATen's CPU upsample backward kernels (float accumulation for half
// types); grad_in has in's shape.
refkStatus refkUpsampleBackward(const refkContext* ctx, refkUpsampleMode mode, const refkTensor* grad_in,
                                const refkTensor* grad_out, int32_t nspatial, int32_t align_corners,
                                const double* scales);

// grid_sampler_2d: out (N, C, Ho, Wo) samples in (N, C, H, W) at grid (N,
// Ho, Wo, 2) (x, y in [-1, 1]); interpolation 0 bilinear, 1 nearest, 2
// bicubic; padding 0 zeros, 1 border, 2 reflection (ATen's enums). One
// floating dtype.
refkStatus refkGridSample2d(const refkContext* ctx, const refkTensor* out, const refkTensor* in,
                            const refkTensor* grid, int32_t interpolation, int32_t padding, int32_t align_corners);

// col2im: out (N, C, H, W) = the sum of the columns of in (N, C * kh * kw,
// L) at the positions im2col reads them from (kernel, dilation, padding,
// stride as [h, w]); bool sums are "or".
refkStatus refkCol2im(const refkContext* ctx, const refkTensor* out, const refkTensor* in, const int64_t* kernel,
                      const int64_t* dilation, const int64_t* padding, const int64_t* stride);

// ---- losses, embedding and optimizer steps
// (the activation backwards are refkBinary ops; mse_loss and
// native_dropout_backward are compositions of pointwise and reduction calls.)

// log_sigmoid, as ATen's CPU kernel (binary_cross_entropy_with_logits
// reaches it): z = exp(-|x|), out = min(x, 0) - log1p(z), and buffer = z
// (saved for the backward; buffer's data may be NULL: CUDA's empty buffer).
// out, buffer and in of one shape and floating dtype; opmath.
refkStatus refkLogSigmoid(const refkContext* ctx, const refkTensor* out, const refkTensor* buffer,
                          const refkTensor* in);
// Its gradient: grad_in = grad * (x < 0 ? 1 - z / (1 + z) : z / (1 + z)), z
// read from buffer, or exp(-|x|) recomputed where buffer's data is NULL.
refkStatus refkLogSigmoidBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad,
                                  const refkTensor* in, const refkTensor* buffer);

// ATen's at::Reduction values.
typedef enum refkLossReduction { refkReductionNone = 0, refkReductionMean = 1, refkReductionSum = 2 } refkLossReduction;

// Negative log likelihood of `self` (batch x classes, floating) at `target`
// (batch; int64 or uint8), weighted by `weight` (classes, self's dtype; NULL
// for all ones); targets equal to ignore_index count for nothing. out is
// (batch) for per-element losses (reduction none), else 0-d: the sum (none
// or sum) or the sum divided by total_weight (mean; 0/0 is NaN).
// total_weight (0-d) gets the weight summed over counted targets (0 for
// per-element losses, as ATen). Sums accumulate in double and round once.
// A target outside [0, classes) fails with refkErrorIndexOutOfBounds and
// the text "Target <t> is out of bounds." (eager's IndexError).
refkStatus refkNllLoss(const refkContext* ctx, const refkTensor* out, const refkTensor* total_weight,
                       const refkTensor* self, const refkTensor* target, const refkTensor* weight, int32_t reduction,
                       int64_t ignore_index);
// Its gradient: grad_input (batch x classes) is zeroed, then
// grad_input[i, t_i] = -w[t_i] * g for each counted i, where g is
// grad_output[i] for per-element losses (reduction none and grad_output of
// batch elements), else grad_output's single value, divided by total_weight
// (1 element) for mean, rounded to the dtype before it is scaled (as ATen).
refkStatus refkNllLossBackward(const refkContext* ctx, const refkTensor* grad_input, const refkTensor* grad_output,
                               const refkTensor* target, const refkTensor* weight, const refkTensor* total_weight,
                               int32_t reduction, int64_t ignore_index);

// embedding's gradient: grad_weight (num_weights x dim) = sum over i of
// grad[i] into row indices[i] (grad: n x dim, indices: n, int32 or int64),
// rows equal to padding_idx skipped, each contribution scaled by 1 / (the
// row's count in indices) when scale_grad_by_freq. Accumulated in ascending
// i, each addition rounded to the dtype (ATen's add_ per index), so results
// are deterministic. An index outside [0, num_weights) fails with
// refkErrorIndexOutOfBounds (Note [Index errors]; <d> is 0).
refkStatus refkEmbeddingBackward(const refkContext* ctx, const refkTensor* grad_weight, const refkTensor* grad,
                                 const refkTensor* indices, int64_t padding_idx, int32_t scale_grad_by_freq);

// embedding_bag as ATen's CPU _embedding_bag: index i (of n, int32 or
// int64 like offsets) belongs to bag b = #{k < bags : offsets[k] <= i} - 1
// (offsets ascending from 0); indices equal to padding_idx are skipped.
// mode 0 sums (each row scaled by per_sample_weights[i] when its data is
// not NULL), 1 averages over the bag's counted rows (at least 1), 2 takes
// the elementwise maximum (NaN only when first) and its word index into
// max_indices (bags x dim; 0 for empty bags). Sums accumulate in double and
// round once. out is bags x dim (empty bags give 0). bag_size (bags) gets
// the counted rows per bag (zeros in mode 0); offset2bag (n) gets b per
// index unless its data is NULL; max_indices in modes 0 and 1 (bags) gets a
// copy of bag_size. An index outside [0, weight rows) fails with
// refkErrorIndexOutOfBounds (Note [Index errors]; <d> is 0).
refkStatus refkEmbeddingBag(const refkContext* ctx, const refkTensor* out, const refkTensor* offset2bag,
                            const refkTensor* bag_size, const refkTensor* max_indices, const refkTensor* weight,
                            const refkTensor* indices, const refkTensor* offsets,
                            const refkTensor* per_sample_weights, int32_t mode, int64_t padding_idx);

// Note [Foreach calls]: torch.optim's foreach path updates every parameter
// of a group with one call per step of its formula, so the library takes the
// whole list at once (a GPU library launches one kernel for all of it).
// out[k] = op(self[k], a[k], b[k], s_k) for k < n, elementwise over tensors
// of one shape per k (a, b broadcast to it as descriptors). s_k is
// scalars[k] when nscalars == n, else scalars[0]. out may be self (in
// place). Computed in opmath (float for the half types) with the scalar
// converted to it, rounded once; floating dtypes only.
typedef enum refkForeachOp {
  refkForeachAddScalar,  // self + s
  refkForeachMulScalar,  // self * s
  refkForeachDivScalar,  // self / s
  refkForeachAdd,        // self + s * a (the half types round s and s * a too, as ATen's add)
  refkForeachMul,        // self * a
  refkForeachDiv,        // self / a
  refkForeachLerp,       // self + s * (a - self), as ATen's lerp (from the end when s >= 0.5)
  refkForeachAddcmul,    // self + s * a * b
  refkForeachAddcdiv,    // self + s * a / b
  refkForeachSqrt,       // sqrt(self)
  refkForeachNeg,        // -self
} refkForeachOp;
refkStatus refkForeach(const refkContext* ctx, refkForeachOp op, int32_t n, const refkTensor* out,
                       const refkTensor* self, const refkTensor* a, const refkTensor* b, const refkScalar* scalars,
                       int32_t nscalars);

// ---- recurrent cells
//
// The fused cells nn.LSTM, nn.GRU, LSTMCell and GRUCell run on a device
// (ATen's _thnn_fused_lstm_cell and _thnn_fused_gru_cell, whose semantics
// are CUDA's kernels). The glue has already multiplied the input and the
// hidden state by the weights: input_gates and hidden_gates are (B, G * H),
// gate k of row b at columns [k * H, (k + 1) * H), and the biases (G * H;
// data NULL when absent, then both are) are added here. Every (b, j)
// is independent: the gates are summed, squashed and combined in opmath
// (float for float16/bfloat16), each result rounded once to the dtype, with
// sigmoid(x) = 1 / (1 + exp(-x)). All operands are 2-d (biases 1-d) of one
// floating dtype, any strides.

// LSTM (gates i, f, g, o; G = 4): i, f, o = sigmoid(sum), g = tanh(sum),
// cy = f * cx + i * g, hy = o * tanh(cy); workspace (B, 4H) keeps i, f, g, o
// at the gates' columns for the backward. hy, cy, cx: (B, H).
refkStatus refkLstmCell(const refkContext* ctx, const refkTensor* hy, const refkTensor* cy, const refkTensor* workspace,
                        const refkTensor* input_gates, const refkTensor* hidden_gates, const refkTensor* cx,
                        const refkTensor* input_bias, const refkTensor* hidden_bias);
// Its gradient from grad_hy and grad_cy (either may have data NULL: zero)
// and the forward's cx, cy, workspace: with t = tanh(cy) and
// gc = grad_hy * o * (1 - t^2) + grad_cy, grad_gates (B, 4H) = [gc * g * i
// (1 - i), gc * cx * f (1 - f), gc * i * (1 - g^2), grad_hy * t * o (1 - o)]
// and grad_cx = gc * f. (The bias gradients are grad_gates summed over B.)
refkStatus refkLstmCellBackward(const refkContext* ctx, const refkTensor* grad_gates, const refkTensor* grad_cx,
                                const refkTensor* grad_hy, const refkTensor* grad_cy, const refkTensor* cx,
                                const refkTensor* cy, const refkTensor* workspace);

// GRU (gates r, z, n; G = 3): r, z = sigmoid(input + hidden + biases),
// n = tanh(in_n + b_in + r * (hn + b_hn)), hy = n + z * (hx - n); workspace
// (B, 5H) keeps r, z, n, hx, hn + b_hn. hy, hx: (B, H).
refkStatus refkGruCell(const refkContext* ctx, const refkTensor* hy, const refkTensor* workspace,
                       const refkTensor* input_gates, const refkTensor* hidden_gates, const refkTensor* hx,
                       const refkTensor* input_bias, const refkTensor* hidden_bias);
// Its gradient from grad_hy (B, H) and the forward's workspace: with
// gn = grad_hy * (1 - z) * (1 - n^2) and gr = gn * (hn + b_hn) * r (1 - r),
// gz = grad_hy * (hx - n) * z (1 - z): grad_input_gates = [gr, gz, gn],
// grad_hidden_gates = [gr, gz, gn * r] (B, 3H), grad_hx = grad_hy * z.
refkStatus refkGruCellBackward(const refkContext* ctx, const refkTensor* grad_input_gates,
                               const refkTensor* grad_hidden_gates, const refkTensor* grad_hx,
                               const refkTensor* grad_hy, const refkTensor* workspace);

// ---- fused activations: the kernels of backend.yaml's autograd: and custom:
// entries (issue 14). Kept in a block of their own.

// out = gelu(in + bias), the sum rounded to the dtype first (as eager's
// gelu(self + bias)); bias broadcast to in's shape (stride 0), or no bias
// when bias is NULL. `tanh` selects the tanh approximation. Floating
// dtypes, all operands of one dtype.
refkStatus refkBiasGelu(const refkContext* ctx, const refkTensor* out, const refkTensor* in, const refkTensor* bias,
                        int32_t tanh);
// grad_in = grad * gelu'(in + bias), same conventions (grad has in's shape).
refkStatus refkBiasGeluBackward(const refkContext* ctx, const refkTensor* grad_in, const refkTensor* grad,
                                const refkTensor* in, const refkTensor* bias, int32_t tanh);
// RMS norm of 2-d in, out (M x N, any strides) over each row:
// out = T(x * rstd) * weight, rstd = 1 / sqrt(mean(x^2) + eps), the
// normalized row rounded to the dtype before the weight (as eager's
// rms_norm); weight has N elements, all ones when NULL. Floating dtypes,
// in, out and weight of one dtype. The backward of the custom operator
// fused_rms_norm is a formula over aten ops (backend.yaml), so no kernel.
refkStatus refkRmsNorm(const refkContext* ctx, const refkTensor* out, const refkTensor* in,
                       const refkTensor* weight, double eps);

// ---- FFT
//
// Discrete Fourier transforms over the dims `dims[0 .. ndims)` (distinct,
// in [0, ndim)) of any length: X[k] = scale * sum_j x[j] * exp(sign * 2 pi
// i * j * k / n) per dim, sign -1 when forward, +1 otherwise, in the
// precision of the complex dtype (complex64 with float32, complex128 with
// float64), the dims one after another.
// - refkFftC2C: in and out complex of one dtype and shape.
// - refkFftR2C: real in, complex out of its precision; always forward. The
//   last listed dim is the real one: out keeps its first out.size(d) <=
//   in.size(d) frequencies (n / 2 + 1 for a onesided transform); the other
//   dims have in's sizes.
// - refkFftC2R: complex in, real out of its precision, one dim (ndims ==
//   1) of length n = out.size(d), read as the Hermitian half: in.size(d) >=
//   n / 2 + 1, entries past it are ignored, and so are the imaginary parts
//   of the zero (and for even n, the n / 2) frequency, as a real result
//   requires. The glue runs the other dims as a C2C first.
typedef enum refkFftKind { refkFftC2C, refkFftR2C, refkFftC2R } refkFftKind;
refkStatus refkFft(const refkContext* ctx, refkFftKind kind, const refkTensor* out, const refkTensor* in,
                   int32_t ndims, const int32_t* dims, int32_t forward, double scale);

#ifdef __cplusplus
}  // extern "C"
#endif
