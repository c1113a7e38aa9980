// Indexing and sorting: gather, scatter (src, value, add, reduce.two),
// index_select, index.Tensor, index_put (and _index_put_impl_ in place),
// masked_fill_, masked_scatter, nonzero, sort and
// topk. The glue checks arguments with eager's messages and error classes,
// resolves advanced indexing as ATen does (masks to coordinates, broadcast
// index tensors, non-adjacent indexed dims moved to the front) into
// descriptors with stride-0 dims, and turns the library's index errors into
// eager's (Note [Index errors] in RefKernels.h). Sizes that depend on data
// (nonzero's count) come back through the driver.
#include "aten/Glue.h"

#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace opgen_ref {

at::Tensor mul(const at::Tensor& self, const at::Scalar& other);  // aten/Binary.cpp (mul.Scalar)

namespace {

// Re-raises the library's index error with eager's class for the op
// (Note [Index errors]); anything else as Glue's check() does.
void check_index(refkStatus s, const char* op, bool index_error) {
  if (s == refkErrorIndexOutOfBounds) {
    const std::string message = refkLastError();
    if (index_error) TORCH_CHECK_INDEX(false, message);
    TORCH_CHECK(false, message);
  }
  check(s, op);
}

// The value and size of the library's index error.
std::pair<int64_t, int64_t> index_error_values() {
  long long value = 0, size = 0;
  int dim = 0;
  std::sscanf(refkLastError(), "index %lld is out of bounds for dimension %d with size %lld", &value, &dim, &size);
  return {value, size};
}

bool is_index_type(c10::ScalarType t) { return t == c10::kLong || t == c10::kInt; }

// t on `device` (eager takes index tensors and 0-d values from the host too).
at::Tensor on(const at::Tensor& t, c10::Device device) { return t.device() == device ? t : t.to(device); }

int64_t nonempty_size(const at::Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.size(d); }

// A new tensor laid out as eager lays out a copy of `self` (its strides when
// they are dense, else contiguous), holding self's values.
at::Tensor copy_of(const at::Tensor& self, c10::Device device, const char* op) {
  const auto options = at::TensorOptions().dtype(self.scalar_type()).device(device);
  at::Tensor out = self.is_non_overlapping_and_dense() ? at::empty_strided(self.sizes(), self.strides(), options)
                                                       : empty(self.sizes(), self.scalar_type(), device);
  copy_into(out, self, op);
  return out;
}

// d moved to the last position of a descriptor (the library sorts and
// selects along the trailing dim).
void move_last(refkTensor& t, int64_t d) {
  const int64_t size = t.sizes[d], stride = t.strides[d];
  for (int64_t k = d; k + 1 < t.ndim; ++k) {
    t.sizes[k] = t.sizes[k + 1];
    t.strides[k] = t.strides[k + 1];
  }
  t.sizes[t.ndim - 1] = size;
  t.strides[t.ndim - 1] = stride;
}

// ---- gather and scatter -------------------------------------------------------

// ATen's gather_shape_check.
void gather_shape_check(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  const int64_t dims = std::max<int64_t>(self.dim(), 1);
  TORCH_CHECK(dims == std::max<int64_t>(index.dim(), 1),
              "Index tensor must have the same number of dimensions as input tensor");
  for (int64_t d = 0; d < dims; ++d) {
    if (d == dim) continue;
    TORCH_CHECK(nonempty_size(index, d) <= nonempty_size(self, d), "Size does not match at dimension ", d,
                " expected index ", index.sizes(), " to be no larger than self ", self.sizes(),
                " apart from dimension ", dim);
  }
}

// ATen's scatter_gather_dtype_check and scatter_shape_check.
void scatter_checks(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor* src) {
  if (index.numel() != 0) {
    TORCH_CHECK(is_index_type(index.scalar_type()), "scatter(): Expected dtype int32/int64 for index");
  }
  if (src != nullptr) {
    TORCH_CHECK(self.scalar_type() == src->scalar_type(), "scatter(): Expected self.dtype to be equal to src.dtype");
  }
  if (index.numel() == 0) return;
  const int64_t dims = std::max<int64_t>(self.dim(), 1);
  TORCH_CHECK(dims == std::max<int64_t>(index.dim(), 1),
              "Index tensor must have the same number of dimensions as self tensor");
  bool wrong = false;
  for (int64_t d = 0; d < dims && !wrong; ++d) {
    wrong = d != dim && nonempty_size(index, d) > nonempty_size(self, d);
  }
  if (!wrong && src != nullptr) {
    // src.size(d) raises eager's IndexError when src has fewer dims.
    for (int64_t d = 0; d < dims && !wrong; ++d) wrong = nonempty_size(index, d) > nonempty_size(*src, d);
  }
  if (src != nullptr) {
    TORCH_CHECK(std::max<int64_t>(src->dim(), 1) == std::max<int64_t>(index.dim(), 1),
                "Index tensor must have the same number of dimensions as src tensor");
    TORCH_CHECK(!wrong, "Expected index ", index.sizes(), " to be no larger than self ", self.sizes(),
                " apart from dimension ", dim, " and to be no larger size than src ", src->sizes());
  } else {
    TORCH_CHECK(!wrong, "Expected index ", index.sizes(), " to be no larger than self ", self.sizes(),
                " apart from dimension ", dim);
  }
}

refkScatterReduce reduction(c10::string_view reduce) {
  if (reduce == "sum") return refkScatterAdd;
  if (reduce == "prod") return refkScatterMultiply;
  if (reduce == "mean") return refkScatterMean;
  if (reduce == "amax") return refkScatterAmax;
  if (reduce == "amin") return refkScatterAmin;
  TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

at::Tensor scatter_impl(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor* src,
                        const c10::Scalar& value, std::optional<c10::string_view> reduce, bool include_self,
                        const char* name) {
  const c10::Device device = common_device({&self, &index, src}, name);
  const c10::DeviceGuard guard(device);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  scatter_checks(self, d, index, src);
  const refkScatterReduce op = reduce ? reduction(*reduce) : refkScatterAssign;
  complex_kernel_dtype(self.scalar_type(), name);
  at::Tensor out = empty(self.sizes(), self.scalar_type(), device);
  copy_into(out, self, name);
  // Eager's mean of bools fails in its reduction, or with nothing to
  // scatter, in the division by the counts.
  TORCH_CHECK_NOT_IMPLEMENTED(op != refkScatterMean || self.scalar_type() != c10::kBool, "\"",
                              index.numel() == 0 ? "div_floor_cpu" : "scatter_gather_tensor_cpu_reduce_mean",
                              "\" not implemented for 'Bool'");
  if (index.numel() == 0) return out;
  const at::Tensor idx = on(index, device);
  const at::Tensor s = src != nullptr ? on(*src, device) : at::Tensor();
  const refkTensor dself = describe_complex_nonempty(out, name), didx = describe_nonempty(idx, name);
  refkTensor dsrc{};
  if (src != nullptr) dsrc = describe_complex_nonempty(s, name);
  // Note [Complex dtypes]: the library scatters a real value into complex
  // elements; a complex one is eager's (value, 0) only when its imaginary
  // part is 0.
  TORCH_CHECK_NOT_IMPLEMENTED(src != nullptr || !value.isComplex() || value.toComplexDouble().imag() == 0, "\"",
                              name, "\" with a complex value is not implemented on ", c10::get_privateuse1_backend());
  const refkScalar v = src != nullptr              ? refkScalar{0, 0}
                       : self.is_complex()          ? refkScalar{value.toComplexDouble().real(), 0}
                                                    : fill_value(value, self.scalar_type(), name);
  const refkContext ctx = context();
  check_index(refkScatter(&ctx, &dself, static_cast<int32_t>(d), &didx, src != nullptr ? &dsrc : nullptr, v, op,
                          include_self ? 1 : 0),
              name, false);
  return out;
}

// ---- advanced indexing ----------------------------------------------------------

// ATen's AdvancedIndex: self's indexed dims (moved to the front when they
// are not adjacent), the index tensors broadcast together, and the result's
// shape (dims before, the index shape, dims after).
struct Advanced {
  std::vector<int64_t> src_sizes, src_strides;  // self's, maybe permuted
  std::vector<at::Tensor> indices;              // the defined ones, in order
  std::vector<int64_t> indexed_sizes, indexed_strides;
  std::vector<int64_t> replacement;             // the broadcast index shape
  int64_t before = 0, after = 0;
  std::vector<int64_t> shape;                   // the indexing result's
};

std::string shapes_as_str(const std::vector<at::Tensor>& ts) {
  std::ostringstream os;
  bool first = true;
  for (const at::Tensor& t : ts) {
    if (!t.defined()) continue;
    if (!first) os << ", ";
    os << t.sizes();
    first = false;
  }
  return os.str();
}

// The broadcast shape of the defined tensors; nullopt when they do not broadcast.
std::optional<std::vector<int64_t>> broadcast_shape(const std::vector<at::Tensor>& ts) {
  std::vector<int64_t> shape;
  for (const at::Tensor& t : ts) {
    if (!t.defined()) continue;
    const int64_t n = std::max<int64_t>(static_cast<int64_t>(shape.size()), t.dim());
    std::vector<int64_t> next(static_cast<size_t>(n), 1);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t a = i - (n - static_cast<int64_t>(shape.size())), b = i - (n - t.dim());
      const int64_t sa = a >= 0 ? shape[static_cast<size_t>(a)] : 1, sb = b >= 0 ? t.size(b) : 1;
      if (sa != sb && sa != 1 && sb != 1) return std::nullopt;
      next[static_cast<size_t>(i)] = sa == 1 ? sb : sa;
    }
    shape = std::move(next);
  }
  return shape;
}

at::Tensor nonzero_on(const at::Tensor& self, c10::Device device);

Advanced make_advanced(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& list, c10::Device device) {
  TORCH_CHECK_INDEX(list.size() <= static_cast<size_t>(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", list.size(), ")");
  TORCH_CHECK_INDEX(list.size() > 0, "at least one index must be provided");
  for (size_t i = 0; i < list.size(); ++i) {
    const std::optional<at::Tensor> t = list.get(i);
    if (!t.has_value() || !t->defined()) continue;
    const auto st = t->scalar_type();
    TORCH_CHECK_INDEX(st == c10::kLong || st == c10::kInt || st == c10::kByte || st == c10::kBool,
                      "tensors used as indices must be long, int, byte or bool tensors");
    TORCH_CHECK_INDEX(t->device() == device || t->device().is_cpu(), "indices should be either on ", c10::kCPU,
                      " or on the same device as the indexed tensor (", device, ")");
  }
  // Masks become the coordinates of their true elements, one index per dim.
  std::vector<at::Tensor> expanded;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::optional<at::Tensor> t = list.get(i);
    if (!t.has_value() || !t->defined()) {
      expanded.emplace_back();
      continue;
    }
    if (t->scalar_type() != c10::kByte && t->scalar_type() != c10::kBool) {
      expanded.push_back(on(*t, device));
      continue;
    }
    if (t->scalar_type() == c10::kByte) {
      TORCH_WARN("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.");
    }
    for (int64_t j = 0; j < t->dim(); ++j) {
      const int64_t at = static_cast<int64_t>(expanded.size()) + j;
      TORCH_CHECK_INDEX(t->size(j) == self.size(at), "The shape of the mask ", t->sizes(), " at index ", j,
                        " does not match the shape of the indexed tensor ", self.sizes(), " at index ", at);
    }
    const at::Tensor coords = nonzero_on(on(*t, device), device);
    for (int64_t j = 0; j < t->dim(); ++j) expanded.push_back(coords.select(1, j));
  }
  const auto shape = broadcast_shape(expanded);
  TORCH_CHECK_INDEX(shape.has_value(), "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                    shapes_as_str(expanded));
  TORCH_CHECK_INDEX(expanded.size() <= static_cast<size_t>(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", expanded.size(), ")");
  expanded.resize(static_cast<size_t>(self.dim()));
  size_t defined = 0;
  for (const at::Tensor& t : expanded) defined += t.defined() ? 1 : 0;
  if (defined == 0) {
    // Eager's kernel asserts at least one index tensor, unless it has
    // nothing to do: self as it is.
    TORCH_CHECK(self.numel() == 0, "index: at least one index tensor is needed, got only None");
    Advanced a;
    a.shape = self.sizes().vec();
    return a;
  }

  // Not adjacent: the indexed dims go to the front, in order (transposeToFront).
  std::vector<int64_t> order;
  const auto first = std::find_if(expanded.begin(), expanded.end(), [](const at::Tensor& t) { return t.defined(); });
  const auto last = std::find_if(expanded.rbegin(), expanded.rend(), [](const at::Tensor& t) { return t.defined(); });
  const bool adjacent =
      std::find_if(first, last.base(), [](const at::Tensor& t) { return !t.defined(); }) == last.base();
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (adjacent || expanded[static_cast<size_t>(d)].defined()) order.push_back(d);
  }
  if (!adjacent) {
    for (int64_t d = 0; d < self.dim(); ++d) {
      if (!expanded[static_cast<size_t>(d)].defined()) order.push_back(d);
    }
  }

  Advanced a;
  a.replacement = *shape;
  bool seen = false;
  for (int64_t d : order) {
    const at::Tensor& t = expanded[static_cast<size_t>(d)];
    a.src_sizes.push_back(self.size(d));
    a.src_strides.push_back(self.stride(d));
    if (t.defined()) {
      seen = true;
      a.indices.push_back(t);
      a.indexed_sizes.push_back(self.size(d));
      a.indexed_strides.push_back(self.stride(d));
    } else if (seen) {
      ++a.after;
    } else {
      ++a.before;
    }
  }
  const bool empty_dim = std::find(a.indexed_sizes.begin(), a.indexed_sizes.end(), 0) != a.indexed_sizes.end();
  const bool empty_index = std::find(a.replacement.begin(), a.replacement.end(), 0) != a.replacement.end();
  TORCH_CHECK_INDEX(!empty_dim || empty_index, "index is out of bounds for dimension with size 0");
  for (int64_t d = 0; d < a.before; ++d) a.shape.push_back(a.src_sizes[static_cast<size_t>(d)]);
  for (int64_t s : a.replacement) a.shape.push_back(s);
  const size_t rest = static_cast<size_t>(a.before) + a.indices.size();
  for (size_t d = rest; d < a.src_sizes.size(); ++d) a.shape.push_back(a.src_sizes[d]);
  // One index dtype for the library: int64 unless all are int32.
  bool all_int = true;
  for (const at::Tensor& t : a.indices) all_int = all_int && t.scalar_type() == c10::kInt;
  if (!all_int) {
    for (at::Tensor& t : a.indices) t = to_dtype(t, c10::kLong, device, "index");
  }
  return a;
}

// Descriptors of an advanced indexing: `base` (self or the result of
// index_put's copy) seen with the result's shape, stride 0 over the index
// dims, and each index tensor placed over the index dims.
struct AdvancedDescriptors {
  refkTensor base{};
  std::vector<refkTensor> indices;
};

AdvancedDescriptors describe_advanced(const Advanced& a, const at::Tensor& base, const char* op) {
  AdvancedDescriptors r;
  r.base = describe(base, op);
  const int64_t nrep = static_cast<int64_t>(a.replacement.size());
  const int64_t nd = static_cast<int64_t>(a.shape.size());
  TORCH_CHECK(nd <= REFK_MAX_DIMS, op, ": results of more than ", REFK_MAX_DIMS, " dimensions are not supported on ",
              c10::get_privateuse1_backend());
  r.base.ndim = static_cast<int32_t>(nd);
  for (int64_t d = 0; d < nd; ++d) {
    r.base.sizes[d] = a.shape[static_cast<size_t>(d)];
    if (d < a.before) {
      r.base.strides[d] = a.src_strides[static_cast<size_t>(d)];
    } else if (d < a.before + nrep) {
      r.base.strides[d] = 0;
    } else {
      r.base.strides[d] = a.src_strides[static_cast<size_t>(d - nrep + static_cast<int64_t>(a.indices.size()))];
    }
  }
  for (const at::Tensor& t : a.indices) {
    const refkTensor over = describe_as(t, a.replacement, op);
    refkTensor x = r.base;
    x.data = over.data;
    x.dtype = over.dtype;
    for (int64_t d = 0; d < nd; ++d) {
      x.strides[d] = d >= a.before && d < a.before + nrep ? over.strides[d - a.before] : 0;
    }
    r.indices.push_back(x);
  }
  return r;
}

at::Tensor nonzero_on(const at::Tensor& self, c10::Device device) {
  const c10::DeviceGuard guard(device);
  const refkContext ctx = context();
  at::Tensor count = empty({}, c10::kLong, device);
  const refkTensor dcount = describe(count, "nonzero"), din = describe(self, "nonzero");
  check(refkCountNonzero(&ctx, &dcount, &din), "nonzero");
  const int64_t n = read_scalar(count).toLong();
  // Eager's layout: coordinates of one element contiguous in memory columns.
  at::Tensor out = at::empty_strided({n, self.dim()}, {1, n},
                                     at::TensorOptions().dtype(c10::kLong).device(device));
  if (out.numel() == 0) return out;
  const refkTensor dout = describe(out, "nonzero");
  check(refkNonzero(&ctx, &dout, &din), "nonzero");
  return out;
}

// index_put's put into `out` (a copy of self, or self itself in place).
// Eager's index_put_ gives one mask (the other indices None) and a
// one-element value to masked_fill_, which takes the value as a Scalar of
// any dtype and refuses anything but a bool mask, or no mask at all; else
// an in-place put refuses values and indices that overlap self.
void put_into(at::Tensor& out, const c10::List<std::optional<at::Tensor>>& indices, const at::Tensor& values,
              bool accumulate, bool in_place) {
  // Eager's index_put with no index fails inside its kernel, a RuntimeError
  // (an IndexError, index.Tensor's, escapes code catching that).
  TORCH_CHECK(indices.size() > 0, "index_put: at least one index must be provided");
  const c10::Device device = out.device();
  std::optional<at::Tensor> mask;
  bool masked_fill = !accumulate && values.numel() == 1;
  for (size_t i = 0; i < indices.size() && masked_fill; ++i) {
    const std::optional<at::Tensor> t = indices.get(i);
    if (!t.has_value() || !t->defined()) continue;
    const bool is_mask = t->scalar_type() == c10::kBool || t->scalar_type() == c10::kByte;
    masked_fill = is_mask && !mask.has_value();
    mask = *t;
  }
  at::Tensor v = values.device() == device ? values : (values.dim() == 0 ? on(values, device) : values);
  if (in_place && !masked_fill) {
    at::assert_no_overlap(out, values);
    for (size_t i = 0; i < indices.size(); ++i) {
      const std::optional<at::Tensor> t = indices.get(i);
      if (t.has_value() && t->defined()) at::assert_no_overlap(out, *t);
    }
  }
  const Advanced a = make_advanced(out, indices, device);
  if (masked_fill) {
    TORCH_CHECK(mask.has_value() && mask->scalar_type() == c10::kBool,
                "masked_fill_ only supports boolean masks, but got mask with dtype ",
                mask.has_value() ? "unsigned char" : "nullptr (uninitialized)");
    const c10::Scalar item = read_scalar(on(v, device));
    fill_value(item, out.scalar_type(), "index_put");  // eager's overflow check
    v = scalar_tensor_on(item, out.scalar_type(), device);
  }
  TORCH_CHECK(at::is_expandable_to(v.sizes(), a.shape), "shape mismatch: value tensor of shape ", v.sizes(),
              " cannot be broadcast to indexing result of shape ", c10::IntArrayRef(a.shape));
  TORCH_CHECK(v.scalar_type() == out.scalar_type(), "Index put requires the source and destination dtypes match, got ",
              out.scalar_type(), " for the destination and ", v.scalar_type(), " for the source.");
  int64_t count = 1;
  for (int64_t s : a.shape) count *= s;
  if (count == 0) return;
  common_device({&out, &v}, "index_put");
  const AdvancedDescriptors ds = describe_advanced(a, out, "index_put");
  const refkTensor dv = describe_as(v, a.shape, "index_put");
  const refkContext ctx = context();
  check_index(refkIndexPut(&ctx, &ds.base, &dv, static_cast<int32_t>(ds.indices.size()), ds.indices.data(),
                           a.indexed_sizes.data(), a.indexed_strides.data(), accumulate ? 1 : 0),
              "index_put", true);
}

}  // namespace

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  (void)sparse_grad;  // a dense gradient is as good
  const c10::Device device = common_device({&self, &index}, "gather");
  const c10::DeviceGuard guard(device);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  at::Tensor out = empty(index.sizes(), self.scalar_type(), device);
  if (index.numel() == 0) return out;
  TORCH_CHECK(is_index_type(index.scalar_type()), "gather(): Expected dtype int32/int64 for index");
  gather_shape_check(self, d, index);
  complex_kernel_dtype(self.scalar_type(), "gather");
  const at::Tensor idx = on(index, device);
  const refkTensor dout = describe_complex_nonempty(out, "gather"), din = describe_complex_nonempty(self, "gather"),
                   didx = describe_nonempty(idx, "gather");
  const refkContext ctx = context();
  check_index(refkGather(&ctx, &dout, &din, static_cast<int32_t>(d), &didx), "gather", false);
  return out;
}

at::Tensor scatter(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return scatter_impl(self, dim, index, &src, 0, std::nullopt, true, "scatter");
}

at::Tensor scatter(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Scalar& value) {
  return scatter_impl(self, dim, index, nullptr, value, std::nullopt, true, "scatter");
}

at::Tensor scatter_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return scatter_impl(self, dim, index, &src, 0, c10::string_view("sum"), true, "scatter_add");
}

at::Tensor scatter_reduce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src,
                          c10::string_view reduce, bool include_self) {
  return scatter_impl(self, dim, index, &src, 0, reduce, include_self, "scatter_reduce");
}

// index_add (MoE layers sum each expert's output into its tokens' rows):
// eager's checks (index_func_meta_impl), then a copy of self into which
// refkScatter adds source, the 1-d index seen over source's shape (stride 0
// on every other dim). An alpha other than 1 scales source first (mul).
at::Tensor index_add(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                     const at::Scalar& alpha) {
  const c10::Device device = common_device({&self, &index, &source}, "index_add");
  const c10::DeviceGuard guard(device);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = index.numel();
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_add_(): Index is supposed to be a vector, but got dim: ", index.dim(),
                    " with type: ", index.scalar_type(), " and size: ", index.sizes());
  TORCH_CHECK(is_index_type(index.scalar_type()), "index_add_(): Expected dtype int32/int64 for index but got: ",
              index.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), "index_add_(): self (", self.scalar_type(),
              ") and source (", source.scalar_type(), ") must have the same scalar type");
  TORCH_CHECK(d == 0 || d < source.dim(), "index_add_(): Indexing dim ", d,
              " is out of bounds of the source tensor with dim ", source.dim());
  if (source.dim() == 0 && n != 1) at::maybe_wrap_dim(d, 0, /*wrap_scalar=*/false);  // eager's message reads source.size(dim)
  TORCH_CHECK(n == nonempty_size(source, d), "index_add_(): Number of indices (", n,
              ") should be equal to source.size(dim): (", nonempty_size(source, d), "), for dim: ", d);
  std::vector<int64_t> self_sizes = self.sizes().vec(), source_sizes = source.sizes().vec();
  if (source.dim() != 0 && self.dim() != 0) {
    self_sizes.erase(self_sizes.begin() + d);
    source_sizes.erase(source_sizes.begin() + d);
  }
  TORCH_CHECK(self_sizes == source_sizes,
              "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = ",
              self.sizes(), " source.shape = ", source.sizes());
  kernel_dtype(self.scalar_type(), "index_add");
  at::Tensor out = empty(self.sizes(), self.scalar_type(), device);
  copy_into(out, self, "index_add");
  if (n == 0 || out.numel() == 0) return out;
  const at::Tensor idx = on(index, device);
  // alpha in self's dtype (truncated for integers), as eager's kernel takes it.
  const auto t = self.scalar_type();
  const c10::Scalar a = t == c10::kBool ? c10::Scalar(alpha.toBool())
                        : c10::isIntegralType(t, false) ? c10::Scalar(alpha.toLong())
                                                        : alpha;
  const bool unit = t == c10::kBool ? a.toBool() : a.equal(1);
  const at::Tensor src = unit ? on(source, device) : opgen_ref::mul(on(source, device), a);
  const refkTensor dself = describe_nonempty(out, "index_add"), dsrc = describe_nonempty(src, "index_add");
  refkTensor didx = dsrc;
  const refkTensor di = describe(idx, "index_add");
  didx.data = di.data;
  didx.dtype = di.dtype;
  for (int32_t k = 0; k < didx.ndim; ++k) didx.strides[k] = 0;
  if (idx.dim() == 1) didx.strides[d] = di.strides[0];
  const refkContext ctx = context();
  const refkStatus s =
      refkScatter(&ctx, &dself, static_cast<int32_t>(d), &didx, &dsrc, refkScalar{0, 0}, refkScatterAdd, 1);
  if (s == refkErrorIndexOutOfBounds) {
    // Eager runs a matrix or more with int64 indices as scatter_add (whose
    // text the library's is), the rest through its own loop.
    const std::string message = refkLastError();
    TORCH_CHECK(!(self.dim() > 1 && index.scalar_type() == c10::kLong), message);
    TORCH_CHECK_INDEX(false, "index out of range in self");
  }
  check(s, "index_add");
  return out;
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  const c10::Device device = common_device({&self, &index}, "index_select");
  const c10::DeviceGuard guard(device);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  const int64_t n = index.numel();
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(!(self.dim() == 0 && n != 1), "index_select(): Index to scalar can have only 1 value, got ", n,
              " value(s)");
  TORCH_CHECK(is_index_type(index.scalar_type()), "index_select(): Expected dtype int32 or int64 for index");
  complex_kernel_dtype(self.scalar_type(), "index_select");
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) shape[static_cast<size_t>(d)] = n;
  at::Tensor out = empty(shape, self.scalar_type(), device);
  if (self.dim() > 1 && n == 0) return out;
  const bool empty_self = self.dim() > 1 && self.numel() == 0;
  if (empty_self) TORCH_CHECK(self.size(d) > 0, "index_select(): self indexing axis dim should be positive");
  const at::Tensor idx = on(index, device);
  const refkTensor dout = describe_complex_nonempty(out, "index_select"),
                   din = describe_complex_nonempty(self, "index_select"),
                   didx = describe(idx, "index_select");
  const refkContext ctx = context();
  const refkStatus s = refkIndexSelect(&ctx, &dout, &din, static_cast<int32_t>(d), &didx);
  if (s == refkErrorIndexOutOfBounds) {
    // Eager's CPU kernel checks up front, with another text and class, for
    // dim 1 of a matrix or more and for an empty self.
    const auto [value, size] = index_error_values();
    TORCH_CHECK(!(self.dim() > 1 && (d == 1 || empty_self)), "INDICES element is out of DATA bounds, id=", value,
                " axis_dim=", size);
    TORCH_CHECK_INDEX(false, "index out of range in self");
  }
  check(s, "index_select");
  return out;
}

at::Tensor index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  const c10::Device device = common_device({&self}, "index");
  const c10::DeviceGuard guard(device);
  kernel_dtype(self.scalar_type(), "index");
  const Advanced a = make_advanced(self, indices, device);
  at::Tensor out = empty(a.shape, self.scalar_type(), device);
  if (out.numel() == 0) return out;
  const AdvancedDescriptors ds = describe_advanced(a, self, "index");
  const refkTensor dout = describe(out, "index");
  const refkContext ctx = context();
  check_index(refkIndex(&ctx, &dout, &ds.base, static_cast<int32_t>(ds.indices.size()), ds.indices.data(),
                        a.indexed_sizes.data(), a.indexed_strides.data()),
              "index", true);
  return out;
}

at::Tensor index_put(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                     const at::Tensor& values, bool accumulate) {
  const c10::Device device = common_device({&self}, "index_put");
  const c10::DeviceGuard guard(device);
  kernel_dtype(self.scalar_type(), "index_put");
  TORCH_CHECK_INDEX(indices.size() <= static_cast<size_t>(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", indices.size(), ")");
  at::Tensor out = copy_of(self, device, "index_put");
  put_into(out, indices, values, accumulate, false);
  return out;
}

// What index_put_ (CompositeExplicitAutograd) calls: the same put, into self.
at::Tensor& _index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                             const at::Tensor& values, bool accumulate, bool unsafe) {
  (void)unsafe;  // every index is checked anyway
  const c10::Device device = common_device({&self}, "index_put_");
  const c10::DeviceGuard guard(device);
  TORCH_CHECK_INDEX(indices.size() <= static_cast<size_t>(self.dim()), "too many indices for tensor of dimension ",
                    self.dim(), " (got ", indices.size(), ")");
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of index_put_ on expanded tensors is deprecated. Please clone() the tensor before performing "
               "this operation. This also applies to advanced indexing e.g. tensor[indices] = tensor");
  }
  kernel_dtype(self.scalar_type(), "index_put_");
  put_into(self, indices, values, accumulate, true);
  return self;
}

// self = mask ? value : self, as refkWhere with self as output and as the
// unselected operand (the same element, never a partial overlap). The mask
// broadcasts to self, never self to the mask.
at::Tensor& masked_fill_(at::Tensor& self, const at::Tensor& mask, const at::Scalar& value) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.dtype());
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing "
               "this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar");
  }
  at::assert_no_partial_overlap(self, mask);
  const c10::Device device = common_device({&self, &mask}, "masked_fill_");
  const c10::DeviceGuard guard(device);
  const auto shape = at::infer_size(self.sizes(), mask.sizes());
  TORCH_CHECK(c10::IntArrayRef(shape).equals(self.sizes()), "output with shape ", self.sizes(),
              " doesn't match the broadcast shape ", c10::IntArrayRef(shape));
  if (!self.is_complex()) fill_value(value, self.scalar_type(), "masked_fill_");  // eager's conversion checks
  complex_kernel_dtype(self.scalar_type(), "masked_fill_");
  if (self.numel() == 0) return self;
  at::Tensor filled = empty({}, self.scalar_type(), device);
  fill_scalar(filled, value, "masked_fill_");
  const refkContext ctx = context();
  const at::Tensor m = on(mask, device);
  const refkTensor ds = describe_complex(self, "masked_fill_"), dm = describe_as(m, shape, "masked_fill_"),
                   dv = describe_complex_as(filled, shape, "masked_fill_");
  check(refkWhere(&ctx, &ds, &dm, &dv, &ds), "masked_fill_");
  return self;
}

at::Tensor& masked_fill_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  return masked_fill_(self, mask, value.device().is_cpu() ? value.item() : read_scalar(value));
}

at::Tensor masked_scatter(const at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  const c10::Device device = common_device({&self, &mask, &source}, "masked_scatter");
  const c10::DeviceGuard guard(device);
  const auto shape = at::infer_size(mask.sizes(), self.sizes());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter: expected self and source to have same dtypes but got", self.scalar_type(), " and ",
              source.scalar_type());
  if (mask.scalar_type() == c10::kByte) {
    TORCH_WARN("masked_scatter_ received a mask with dtype torch.uint8, this behavior is now deprecated,"
               "please use a mask with dtype torch.bool instead.");
  }
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_scatter_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  complex_kernel_dtype(self.scalar_type(), "masked_scatter");
  at::Tensor out = empty(shape, self.scalar_type(), device);
  copy_into(out, self, "masked_scatter");
  if (out.numel() == 0) return out;
  const at::Tensor m = on(mask, device), src = on(source, device);
  const refkTensor dout = describe_complex(out, "masked_scatter"), dmask = describe_as(m, shape, "masked_scatter"),
                   dsrc = describe_complex(src, "masked_scatter");
  const refkContext ctx = context();
  const refkStatus s = refkMaskedScatter(&ctx, &dout, &dmask, &dsrc);
  if (s == refkErrorInvalidValue) TORCH_CHECK(false, refkLastError());
  check(s, "masked_scatter");
  return out;
}

at::Tensor nonzero(const at::Tensor& self) {
  const c10::Device device = common_device({&self}, "nonzero");
  kernel_dtype(self.scalar_type(), "nonzero");
  return nonzero_on(on(self, device), device);
}

// Eager's nonzero_out_cpu: its out dtype check and text first (the derived
// out= wording differs: Note [Error samples] in the runner), then the
// overlap checks; a resized out gets the functional's column-major layout.
at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  TORCH_CHECK(out.scalar_type() == c10::kLong,
              "nonzero: Expected out tensor to have scalar type Long but got scalar type", out.scalar_type());
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  const at::Tensor r = opgen_ref::nonzero(self);
  const c10::DeviceGuard guard(out.device());
  if (!out.sizes().equals(r.sizes())) {
    resize_out(out, r.sizes());
    out.as_strided_(r.sizes(), r.strides());
  }
  copy_into(out, r, "nonzero");
  return out;
}

std::tuple<at::Tensor, at::Tensor> sort(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                        bool descending) {
  const c10::Device device = common_device({&self}, "sort");
  const c10::DeviceGuard guard(device);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  kernel_dtype(self.scalar_type(), "sort");
  // Eager's layout: self's strides when dense, else dense ones in its order.
  const std::vector<int64_t> strides = self.is_non_overlapping_and_dense()
                                           ? self.strides().vec()
                                           : at::infer_dense_strides(self.sizes(), self.strides());
  const auto options = at::TensorOptions().device(device);
  at::Tensor values = at::empty_strided(self.sizes(), strides, options.dtype(self.scalar_type()));
  at::Tensor indices = at::empty_strided(self.sizes(), strides, options.dtype(c10::kLong));
  if (self.numel() == 0) return {values, indices};
  const refkContext ctx = context();
  if (self.dim() == 0) {
    copy_into(values, self, "sort");
    const refkTensor di = describe(indices, "sort");
    check(refkFill(&ctx, &di, refkScalar{0, 0}), "sort");
    return {values, indices};
  }
  refkTensor dv = describe(values, "sort"), di = describe(indices, "sort"), din = describe(self, "sort");
  for (refkTensor* t : {&dv, &di, &din}) move_last(*t, d);
  check(refkSort(&ctx, &dv, &di, &din, descending ? 1 : 0, stable.value_or(false) ? 1 : 0), "sort");
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> sort(const at::Tensor& self, int64_t dim, bool descending) {
  return opgen_ref::sort(self, std::optional<bool>(false), dim, descending);
}

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  const c10::Device device = common_device({&self}, "topk");
  const c10::DeviceGuard guard(device);
  const int64_t d = at::maybe_wrap_dim(dim, self.dim(), /*wrap_scalar=*/true);
  TORCH_CHECK(k >= 0 && k <= (self.dim() > 0 ? self.size(d) : 1), "selected index k out of range");
  TORCH_CHECK(self.scalar_type() != c10::kBool, "topk does not support bool dtypes on CPU");
  kernel_dtype(self.scalar_type(), "topk");
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) shape[static_cast<size_t>(d)] = k;
  at::Tensor values = empty(shape, self.scalar_type(), device);
  at::Tensor indices = empty(shape, c10::kLong, device);
  const refkContext ctx = context();
  if (self.dim() == 0) {
    copy_into(values, self, "topk");
    const refkTensor di = describe(indices, "topk");
    check(refkFill(&ctx, &di, refkScalar{0, 0}), "topk");
    return {values, indices};
  }
  if (values.numel() == 0) return {values, indices};
  refkTensor dv = describe(values, "topk"), di = describe(indices, "topk"), din = describe(self, "topk");
  for (refkTensor* t : {&dv, &di, &din}) move_last(*t, d);
  check(refkTopk(&ctx, &dv, &di, &din, k, largest ? 1 : 0, sorted ? 1 : 0), "topk");
  return {values, indices};
}

}  // namespace opgen_ref
