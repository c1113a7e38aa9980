// The CUDA library's shared host helpers: refkLastError's per-thread text,
// dtype names, shape checks and launch status.
#include "kernels/cuda/Common.cuh"

namespace refkc {
namespace {
thread_local std::string tls_error;
}  // namespace

const char* dtype_name(refkDtype d) {
  switch (d) {
    case refkBool: return "Bool";
    case refkUInt8: return "Byte";
    case refkInt8: return "Char";
    case refkInt16: return "Short";
    case refkInt32: return "Int";
    case refkInt64: return "Long";
    case refkFloat16: return "Half";
    case refkBFloat16: return "BFloat16";
    case refkFloat32: return "Float";
    case refkFloat64: return "Double";
  }
  return "unknown";
}

refkStatus fail(refkStatus s, const std::string& message) {
  tls_error = message;
  return s;
}

refkStatus unsupported(const char* op, refkDtype d) {
  return fail(refkErrorUnsupportedDtype, std::string(op) + ": dtype " + dtype_name(d) + " is not supported");
}

refkStatus launched(const char* op) {
  const cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return refkSuccess;
  return fail(refkErrorInvalidValue, std::string(op) + ": CUDA launch failed: " + cudaGetErrorString(e));
}

refkStatus not_implemented(const char* entry) {
  return fail(refkErrorNotImplemented,
              std::string(entry) + " is not implemented by the CUDA kernel library (kernels/cuda/); operators that "
                                   "need it run through the CPU fallback unless backend.yaml lists them");
}

refkStatus check_shapes(const char* op, std::initializer_list<const refkTensor*> ts) {
  const refkTensor* first = *ts.begin();
  for (const refkTensor* t : ts) {
    if (!same_shape(*first, *t)) return fail(refkErrorInvalidValue, std::string(op) + ": operand shapes differ");
  }
  return refkSuccess;
}

}  // namespace refkc

extern "C" const char* refkLastError(void) { return refkc::tls_error.c_str(); }
