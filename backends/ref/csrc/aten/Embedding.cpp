// Embedding lookups and their dense gradient. embedding is eager's
// composite: index_select of weight's rows (aten/Index.cpp's kernel) viewed
// as indices.shape + (dim); embedding_dense_backward sums gradient rows into
// a fresh grad_weight with refkEmbeddingBackward; _embedding_bag is eager's
// CPU kernel, auxiliary outputs included, over refkEmbeddingBag.
#include "aten/Glue.h"

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/util/Exception.h>

#include <cstdio>

namespace opgen_ref {

// aten/Index.cpp
at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index);

namespace {

void check_index_dtype(const at::Tensor& indices, const char* arg, int pos, const char* op) {
  const auto st = indices.scalar_type();
  TORCH_CHECK(st == c10::kLong || st == c10::kInt, "Expected tensor for argument #", pos, " '", arg,
              "' to have one of the following scalar types: Long, Int; but got ", indices.toString(),
              " instead (while checking arguments for ", op, ")");
}

}  // namespace

at::Tensor embedding(const at::Tensor& weight, const at::Tensor& indices, int64_t padding_idx,
                     bool scale_grad_by_freq, bool sparse) {
  (void)padding_idx, (void)scale_grad_by_freq, (void)sparse;  // they shape the gradient only
  TORCH_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  check_index_dtype(indices, "indices", 1, "embedding");
  if (indices.dim() == 1) return index_select(weight, 0, indices);
  std::vector<int64_t> size(indices.sizes().begin(), indices.sizes().end());
  size.push_back(weight.size(1));
  return index_select(weight, 0, indices.reshape(-1)).view(size);
}

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices, int64_t num_weights,
                                    int64_t padding_idx, bool scale_grad_by_freq) {
  const c10::Device device = common_device({&grad_output, &indices}, "embedding_dense_backward");
  const c10::DeviceGuard guard(device);
  check_index_dtype(indices, "indices", 2, "embedding_backward");
  const int64_t n = indices.numel();
  const int64_t dim = grad_output.size(-1);
  TORCH_CHECK(grad_output.numel() == n * dim, "embedding_dense_backward: grad_output ", grad_output.sizes(),
              " does not match indices ", indices.sizes());
  kernel_dtype(grad_output.scalar_type(), "embedding_dense_backward");
  at::Tensor grad_weight = empty({num_weights, dim}, grad_output.scalar_type(), device);
  if (grad_weight.numel() == 0) return grad_weight;
  // (n x dim) and (n) views; a layout that cannot be viewed so is copied first.
  const at::Tensor grad = grad_output.reshape({n, dim});
  const at::Tensor idx = indices.reshape({n});
  const refkTensor gw = describe(grad_weight, "embedding_dense_backward");
  refkTensor g = describe(grad, "embedding_dense_backward"), i = describe(idx, "embedding_dense_backward");
  if (n == 0) g.data = i.data = nullptr;
  const refkContext ctx = context();
  const refkStatus s = refkEmbeddingBackward(&ctx, &gw, &g, &i, padding_idx, scale_grad_by_freq ? 1 : 0);
  if (s == refkErrorIndexOutOfBounds) TORCH_CHECK_INDEX(false, refkLastError());
  check(s, "embedding_dense_backward");
  return grad_weight;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> _embedding_bag(
    const at::Tensor& weight, const at::Tensor& indices_, const at::Tensor& offsets_, bool scale_grad_by_freq,
    int64_t mode, bool sparse, const std::optional<at::Tensor>& per_sample_weights, bool include_last_offset,
    int64_t padding_idx) {
  (void)scale_grad_by_freq, (void)sparse;  // they shape the gradient only
  const at::Tensor* psw = per_sample_weights.has_value() && per_sample_weights->defined() ? &*per_sample_weights : nullptr;
  const c10::Device device = common_device({&weight, &indices_, &offsets_, psw}, "_embedding_bag");
  const c10::DeviceGuard guard(device);
  TORCH_CHECK(indices_.dim() == 1 || indices_.dim() == 2,
              "input has to be a 1D or 2D Tensor, but got Tensor of dimension ", indices_.dim());
  if (indices_.dim() == 1) {
    TORCH_CHECK(offsets_.dim() == 1, "offsets has to be a 1D Tensor, but got Tensor of dimension ", offsets_.dim());
  }
  TORCH_CHECK(indices_.dim() == 1, "_embedding_bag: 2-D input is not supported on ", c10::get_privateuse1_backend(),
              "; flatten it and pass offsets, as torch.nn.functional.embedding_bag does");
  // eager's checkScalarTypes / checkSameType on the promoted pair
  check_index_dtype(indices_, "indices", 1, "embedding_bag");
  check_index_dtype(offsets_, "offsets", 1, "embedding_bag");
  const auto index_type = c10::promoteTypes(indices_.scalar_type(), offsets_.scalar_type());
  const at::Tensor indices = to_dtype(indices_, index_type, device, "_embedding_bag");
  const at::Tensor offsets = to_dtype(offsets_, index_type, device, "_embedding_bag");
  const auto wt = weight.scalar_type();
  TORCH_CHECK(wt == c10::kHalf || wt == c10::kBFloat16 || wt == c10::kFloat || wt == c10::kDouble,
              "Expected tensor for argument #1 'weight' to have one of the following scalar types: Half, BFloat16, "
              "Float, Double; but got ", weight.toString(), " instead (while checking arguments for embedding_bag)");
  if (offsets.size(0) > 0) {
    const int64_t first = read_scalar(offsets[0]).toLong();
    const int64_t last = read_scalar(offsets[offsets.size(0) - 1]).toLong();
    TORCH_CHECK(first == 0, "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                            "position 0. However, got ", first);
    TORCH_CHECK(last <= indices.size(0), "offsets[-1] can not be greater than input's length ", indices.size(0),
                " but got offsets[-1] of ", last);
  }
  if (psw != nullptr) {
    TORCH_CHECK(mode == 0, "embedding_bag: per_sample_weights only supported with mode='sum'");
    TORCH_CHECK(psw->scalar_type() == wt, "Expected tensor for argument #1 'per_sample_weights' to have the same type ",
                "as tensor for argument #1 'weight'; but type ", psw->toString(), " does not equal ", weight.toString(),
                " (while checking arguments for embedding_bag)");
    TORCH_CHECK(psw->dim() == 1);
    TORCH_CHECK(psw->numel() == indices.numel());
  }
  if (include_last_offset) {
    TORCH_CHECK(offsets.size(0) >= 1, "include_last_offset: number of offset should be at least 1");
  }
  const int64_t bags = include_last_offset ? offsets.size(0) - 1 : offsets.size(0);
  const int64_t dim = weight.size(1);
  at::Tensor output = empty({bags, dim}, wt, device);
  // ATen skips offset2bag on its fast summing path (float/half/bfloat16
  // rows with unit stride, no padding index).
  const bool fast_sum = mode == 0 && wt != c10::kDouble && weight.stride(1) == 1 && padding_idx < 0 &&
                        (psw == nullptr || psw->stride(0) == 1);
  at::Tensor offset2bag = empty({fast_sum ? 0 : indices.size(0)}, index_type, device);
  at::Tensor bag_size = empty({bags}, index_type, device);
  at::Tensor max_indices = mode == 2 ? empty({bags, dim}, index_type, device) : empty({bags}, index_type, device);
  if (bags == 0) return {output, offset2bag, bag_size, max_indices};
  refkTensor o = describe(output, "_embedding_bag"), o2b = describe(offset2bag, "_embedding_bag"),
             bs = describe(bag_size, "_embedding_bag"), mi = describe(max_indices, "_embedding_bag"),
             w = describe(weight, "_embedding_bag"), idx = describe(indices, "_embedding_bag"),
             off = describe(offsets, "_embedding_bag"), pw{};
  if (psw != nullptr) pw = describe(*psw, "_embedding_bag");
  const refkContext ctx = context();
  const refkStatus s = refkEmbeddingBag(&ctx, &o, &o2b, &bs, &mi, &w, &idx, &off, psw ? &pw : nullptr,
                                        static_cast<int32_t>(mode), padding_idx);
  if (s == refkErrorIndexOutOfBounds) {
    long long value = 0;
    std::sscanf(refkLastError(), "index %lld", &value);
    TORCH_CHECK(false, "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be ", value);
  }
  check(s, "_embedding_bag");
  return {output, offset2bag, bag_size, max_indices};
}

}  // namespace opgen_ref
