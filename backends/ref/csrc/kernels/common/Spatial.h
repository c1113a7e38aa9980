// The index space pooling, padding and resampling kernels share (Note
// [Spatial dims] in RefKernels.h), written once for every device (Note [One
// definition per semantics] in Dtypes.h): operands split into plane dims and
// up to three spatial dims, padded in front to exactly three (size 1,
// stride 0), so one kernel body serves 1-d, 2-d and 3-d. One plane dim may
// become the "lane": when it is the innermost dim in memory of the operand
// read most (a channels-last tensor's C), the CPU kernels run their inner
// loop over it; the CUDA kernels take a thread per (plane, lane, position).
// The struct is passed to CUDA kernels by value.
#pragma once

#include "kernels/common/Descriptors.h"
#include "kernels/common/Dtypes.h"

namespace refk {

struct Spatial {
  // Spatial dims, padded to 3 (dim 0 outermost), sizes of side A and B and
  // element strides of up to three operands (0 = side A, 1 and 2 = side B).
  int64_t a[3] = {1, 1, 1}, b[3] = {1, 1, 1};
  int64_t st[3][3] = {};
  // Plane dims other than the lane, with the operands' element strides.
  int nplane = 0;
  int64_t plane_sizes[REFK_MAX_DIMS] = {};
  int64_t plane_st[3][REFK_MAX_DIMS] = {};
  int64_t planes = 1;
  int64_t lanes = 1;
  int64_t lane_st[3] = {};

  // Byte-free element offsets of plane p in the three operands.
  REFK_HOST_DEVICE void plane_offsets(int64_t p, int64_t off[3]) const {
    off[0] = off[1] = off[2] = 0;
    for (int d = nplane - 1; d >= 0; --d) {
      const int64_t i = p % plane_sizes[d];
      p /= plane_sizes[d];
      for (int k = 0; k < 3; ++k) off[k] += i * plane_st[k][d];
    }
  }
  REFK_HOST_DEVICE int64_t a_numel() const { return a[0] * a[1] * a[2]; }
  REFK_HOST_DEVICE int64_t b_numel() const { return b[0] * b[1] * b[2]; }
};

// Builds the space of `sa` (side A) and `sb`, `sc` (side B, sc may be null):
// all share the plane dims; the trailing nspatial dims are spatial. With
// allow_lane, the plane dim in which `lane_of` (0: sa, 1: sb) has stride 1
// while its innermost spatial dim does not becomes the lane.
inline Spatial make_spatial(int nspatial, const refkTensor& sa, const refkTensor& sb, const refkTensor* sc,
                            bool allow_lane, int lane_of = 0) {
  Spatial s;
  const refkTensor* ops[3] = {&sa, &sb, sc != nullptr ? sc : &sb};
  const int np = sa.ndim - nspatial;
  for (int i = 0; i < nspatial; ++i) {
    const int d = 3 - nspatial + i;
    s.a[d] = sa.sizes[np + i];
    s.b[d] = sb.sizes[np + i];
    for (int k = 0; k < 3; ++k) s.st[k][d] = ops[k]->strides[np + i];
  }
  int lane = -1;
  const refkTensor& lt = *ops[lane_of];
  if (allow_lane && nspatial > 0 && lt.strides[lt.ndim - 1] != 1) {
    for (int d = 0; d < np; ++d) {
      if (lt.sizes[d] > 1 && lt.strides[d] == 1) lane = d;
    }
  }
  for (int d = 0; d < np; ++d) {
    if (d == lane) {
      s.lanes = sa.sizes[d];
      for (int k = 0; k < 3; ++k) s.lane_st[k] = ops[k]->strides[d];
      continue;
    }
    s.plane_sizes[s.nplane] = sa.sizes[d];
    for (int k = 0; k < 3; ++k) s.plane_st[k][s.nplane] = ops[k]->strides[d];
    s.planes *= sa.sizes[d];
    ++s.nplane;
  }
  return s;
}

}  // namespace refk
