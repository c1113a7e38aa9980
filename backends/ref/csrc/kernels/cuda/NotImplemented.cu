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

refkStatus refkEmbeddingBag(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*,
                            const refkTensor*, const refkTensor*, const refkTensor*, const refkTensor*,
                            const refkTensor*, int32_t, int64_t) {
  return not_implemented("refkEmbeddingBag");
}


// Histograms count with atomic adds into the output's dtype (ATen's CUDA
// histc: gpuAtomicAdd, emulated by compare-and-swap for the 8- and 16-bit
// integers); that atomic layer is not written yet.
refkStatus refkHistc(const refkContext*, const refkTensor*, const refkTensor*, refkScalar, refkScalar) {
  return not_implemented("refkHistc");
}

refkStatus refkRmsNorm(const refkContext*, const refkTensor*, const refkTensor*, const refkTensor*, double) {
  return not_implemented("refkRmsNorm");
}
refkStatus refkFft(const refkContext*, refkFftKind, const refkTensor*, const refkTensor*, int32_t, const int32_t*, int32_t,
                   double) {
  return not_implemented("refkFft");
}

}  // extern "C"
