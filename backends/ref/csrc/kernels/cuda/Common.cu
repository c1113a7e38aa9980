// The CUDA library's shared host helpers (its errors are common/Errors.h's):
// launch status and the host side of Note [Index errors on
// the device].
#include "kernels/cuda/Common.cuh"

namespace refkc {

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

refkStatus ErrorFlag::init(const char* op) {
  cudaError_t e = cudaMallocAsync(reinterpret_cast<void**>(&flag_), sizeof(int), stream_);
  if (e == cudaSuccess) e = cudaMemsetAsync(flag_, 0, sizeof(int), stream_);
  if (e != cudaSuccess) return fail(refkErrorInvalidValue, std::string(op) + ": " + cudaGetErrorString(e));
  return refkSuccess;
}

refkStatus ErrorFlag::read(const char* op, bool& raised) {
  int host = 0;
  cudaError_t e = cudaMemcpyAsync(&host, flag_, sizeof(int), cudaMemcpyDeviceToHost, stream_);
  if (e == cudaSuccess) e = cudaStreamSynchronize(stream_);
  if (e != cudaSuccess) return fail(refkErrorInvalidValue, std::string(op) + ": " + cudaGetErrorString(e));
  raised = host != 0;
  return refkSuccess;
}

refkStatus index_values(const char* op, const refkTensor& t, std::vector<int64_t>& out) {
  const int64_t n = numel(t), isz = itemsize(t.dtype);
  out.assign(static_cast<size_t>(n), 0);
  if (n == 0) return refkSuccess;
  // The span of elements the descriptor covers (strides may be 0 or negative).
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < t.ndim; ++d) {
    const int64_t reach = (t.sizes[d] - 1) * t.strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
  std::vector<unsigned char> bytes(static_cast<size_t>((hi - lo + 1) * isz));
  const char* first = static_cast<const char*>(t.data) + lo * isz;
  // Whatever stream wrote the indices has finished (an error path: the cost
  // does not matter).
  cudaError_t e = cudaDeviceSynchronize();
  if (e == cudaSuccess) e = cudaMemcpy(bytes.data(), first, bytes.size(), cudaMemcpyDeviceToHost);
  if (e != cudaSuccess) return fail(refkErrorInvalidValue, std::string(op) + ": " + cudaGetErrorString(e));
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0, rem = i;
    for (int d = t.ndim - 1; d >= 0; --d) {
      off += (rem % t.sizes[d]) * t.strides[d];
      rem /= t.sizes[d];
    }
    const unsigned char* p = bytes.data() + (off - lo) * isz;
    int64_t v = 0;
    if (t.dtype == refkInt64) {
      std::memcpy(&v, p, 8);
    } else if (t.dtype == refkInt32) {
      int32_t w;
      std::memcpy(&w, p, 4);
      v = w;
    } else {
      v = *p;  // uint8
    }
    out[static_cast<size_t>(i)] = v;
  }
  return refkSuccess;
}

refkStatus index_error(int64_t value, int64_t dim, int64_t size) {
  return fail(refkErrorIndexOutOfBounds, "index " + std::to_string(value) + " is out of bounds for dimension " +
                                             std::to_string(dim) + " with size " + std::to_string(size));
}

}  // namespace refkc

extern "C" const char* refkLastError(void) { return refk::last_error().c_str(); }
