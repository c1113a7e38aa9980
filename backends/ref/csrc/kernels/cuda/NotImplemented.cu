// The kernel library entry points (RefKernels.h) the CUDA library does not
// implement yet. Each exists, so a project links and imports, and fails
// with refkErrorNotImplemented and a text naming it; the operators that
// need them are left out of backends/ref/cuda-ops.txt, so they run through
// the CPU fallback (and the fallback counter names them).
//
// Note [Every entry point has a CUDA definition]: an entry point declared
// in RefKernels.h with no definition here or in another kernels/cuda/ file
// leaves the CUDA project's extension with an undefined symbol, so its
// import fails; test/integration/cuda-backend.test.ts checks the header
// against kernels/cuda/ without building. A new entry point gets a line
// here until its kernel exists.
#include "kernels/cuda/Common.cuh"

using refkc::not_implemented;

extern "C" {

refkStatus refkRandperm(const refkContext*, const refkTensor*, uint64_t, uint64_t) {
  return not_implemented("refkRandperm");
}
refkStatus refkGather(const refkContext*, const refkTensor*, const refkTensor*, int32_t, const refkTensor*) {
  return not_implemented("refkGather");
}
refkStatus refkScatter(const refkContext*, const refkTensor*, int32_t, const refkTensor*, const refkTensor*, refkScalar,
                       refkScatterReduce, int32_t) {
  return not_implemented("refkScatter");
}
refkStatus refkIndexSelect(const refkContext*, const refkTensor*, const refkTensor*, int32_t, const refkTensor*) {
  return not_implemented("refkIndexSelect");
}
refkStatus refkIndex(const refkContext*, const refkTensor*, const refkTensor*, int32_t, const refkTensor*,
                     const int64_t*, const int64_t*) {
  return not_implemented("refkIndex");
}
refkStatus refkIndexPut(const refkContext*, const refkTensor*, const refkTensor*, int32_t, const refkTensor*,
                        const int64_t*, const int64_t*, int32_t) {
  return not_implemented("refkIndexPut");
}
refkStatus refkSort(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*, int32_t, int32_t) {
  return not_implemented("refkSort");
}
refkStatus refkTopk(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*, int64_t, int32_t,
                    int32_t) {
  return not_implemented("refkTopk");
}
refkStatus refkCountNonzero(const refkContext*, const refkTensor*, const refkTensor*) {
  return not_implemented("refkCountNonzero");
}
refkStatus refkNonzero(const refkContext*, const refkTensor*, const refkTensor*) {
  return not_implemented("refkNonzero");
}
refkStatus refkMaskedScatter(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*) {
  return not_implemented("refkMaskedScatter");
}
refkStatus refkSoftmax(const refkContext*, const refkTensor*, const refkTensor*, int32_t, int32_t) {
  return not_implemented("refkSoftmax");
}
refkStatus refkSoftmaxBackward(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*, int32_t,
                               int32_t) {
  return not_implemented("refkSoftmaxBackward");
}
refkStatus refkLayerNorm(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*,
                         const refkTensor*, const refkTensor*, const refkTensor*, double) {
  return not_implemented("refkLayerNorm");
}
refkStatus refkLayerNormBackward(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*,
                                 const refkTensor*, const refkTensor*, const refkTensor*, const refkTensor*,
                                 const refkTensor*) {
  return not_implemented("refkLayerNormBackward");
}
refkStatus refkGroupNorm(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*,
                         const refkTensor*, const refkTensor*, const refkTensor*, int64_t, double) {
  return not_implemented("refkGroupNorm");
}
refkStatus refkGroupNormBackward(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*,
                                 const refkTensor*, const refkTensor*, const refkTensor*, const refkTensor*,
                                 const refkTensor*, int64_t) {
  return not_implemented("refkGroupNormBackward");
}
refkStatus refkBatchNorm(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*,
                         const refkTensor*, const refkTensor*, const refkTensor*, const refkTensor*,
                         const refkTensor*, int32_t, double, double) {
  return not_implemented("refkBatchNorm");
}
refkStatus refkBatchNormBackward(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*,
                                 const refkTensor*, const refkTensor*, const refkTensor*, const refkTensor*,
                                 const refkTensor*, const refkTensor*, const refkTensor*, int32_t, double) {
  return not_implemented("refkBatchNormBackward");
}
refkStatus refkConvIm2col(const refkContext*, const refkTensor*, const refkTensor*, const refkConvGeometry*) {
  return not_implemented("refkConvIm2col");
}
refkStatus refkConvCol2im(const refkContext*, const refkTensor*, const refkTensor*, const refkConvGeometry*) {
  return not_implemented("refkConvCol2im");
}
refkStatus refkCdist(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*, double) {
  return not_implemented("refkCdist");
}
refkStatus refkPdist(const refkContext*, const refkTensor*, const refkTensor*, double) {
  return not_implemented("refkPdist");
}

refkStatus refkPool(const refkContext*, refkPoolMode, const refkTensor*, const refkTensor*, const refkTensor*,
                    const refkPoolParams*) {
  return not_implemented("refkPool");
}
refkStatus refkPoolBackward(const refkContext*, refkPoolMode, const refkTensor*, const refkTensor*, const refkTensor*,
                            const refkPoolParams*) {
  return not_implemented("refkPoolBackward");
}
refkStatus refkPad(const refkContext*, refkPadMode, const refkTensor*, const refkTensor*, int32_t, const int64_t*) {
  return not_implemented("refkPad");
}
refkStatus refkUpsample(const refkContext*, refkUpsampleMode, const refkTensor*, const refkTensor*, int32_t, int32_t,
                        const double*) {
  return not_implemented("refkUpsample");
}
refkStatus refkPadBackward(const refkContext*, refkPadMode, const refkTensor*, const refkTensor*, int32_t,
                           const int64_t*) {
  return not_implemented("refkPadBackward");
}
refkStatus refkUpsampleBackward(const refkContext*, refkUpsampleMode, const refkTensor*, const refkTensor*, int32_t,
                                int32_t, const double*) {
  return not_implemented("refkUpsampleBackward");
}
refkStatus refkGridSample2d(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*, int32_t,
                            int32_t, int32_t) {
  return not_implemented("refkGridSample2d");
}
refkStatus refkCol2im(const refkContext*, const refkTensor*, const refkTensor*, const int64_t*, const int64_t*,
                      const int64_t*, const int64_t*) {
  return not_implemented("refkCol2im");
}

refkStatus refkNllLoss(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*, const refkTensor*,
                       const refkTensor*, int32_t, int64_t) {
  return not_implemented("refkNllLoss");
}
refkStatus refkNllLossBackward(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*,
                               const refkTensor*, const refkTensor*, int32_t, int64_t) {
  return not_implemented("refkNllLossBackward");
}
refkStatus refkEmbeddingBackward(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*, int64_t,
                                 int32_t) {
  return not_implemented("refkEmbeddingBackward");
}
refkStatus refkEmbeddingBag(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*,
                            const refkTensor*, const refkTensor*, const refkTensor*, const refkTensor*,
                            const refkTensor*, int32_t, int64_t) {
  return not_implemented("refkEmbeddingBag");
}
refkStatus refkForeach(const refkContext*, refkForeachOp, int32_t, const refkTensor*, const refkTensor*,
                       const refkTensor*, const refkTensor*, const refkScalar*, int32_t) {
  return not_implemented("refkForeach");
}

refkStatus refkLstmCell(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*, const refkTensor*,
                        const refkTensor*, const refkTensor*, const refkTensor*, const refkTensor*) {
  return not_implemented("refkLstmCell");
}
refkStatus refkLstmCellBackward(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*,
                                const refkTensor*, const refkTensor*, const refkTensor*, const refkTensor*) {
  return not_implemented("refkLstmCellBackward");
}
refkStatus refkGruCell(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*, const refkTensor*,
                       const refkTensor*, const refkTensor*, const refkTensor*) {
  return not_implemented("refkGruCell");
}
refkStatus refkGruCellBackward(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*,
                               const refkTensor*, const refkTensor*) {
  return not_implemented("refkGruCellBackward");
}

}  // extern "C"
