// Note [Meta copies]: eager's meta functions (Note [Derived out dtype checks])
// and the Meta kernels behind Note [Functional from out] read only sizes,
// strides, dtypes and whether a 0-dim tensor is a wrapped Python number (it
// promotes like a scalar, not like a tensor), so a meta copy keeps exactly
// those. at::detail::empty_strided_meta makes one without a dispatcher call.
at::Tensor to_meta(const at::Tensor& t) {
  if (!t.defined()) return t;
  at::Tensor m = at::detail::empty_strided_meta(t.sizes(), t.strides(), t.scalar_type());
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) m.unsafeGetTensorImpl()->set_wrapped_number(true);
  return m;
}

std::optional<at::Tensor> to_meta(const std::optional<at::Tensor>& t) {
  return t.has_value() ? std::optional<at::Tensor>(to_meta(*t)) : std::nullopt;
}

std::vector<at::Tensor> to_meta(at::TensorList ts) {
  std::vector<at::Tensor> ms;
  ms.reserve(ts.size());
  for (const at::Tensor& t : ts) ms.push_back(to_meta(t));
  return ms;
}

c10::List<std::optional<at::Tensor>> to_meta(const c10::List<std::optional<at::Tensor>>& ts) {
  c10::List<std::optional<at::Tensor>> ms;
  ms.reserve(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) ms.push_back(to_meta(ts.get(i)));
  return ms;
}

c10::IValue to_meta(const c10::IValue& v) {
  if (v.isTensor()) return to_meta(v.toTensor());
  if (v.isTensorList()) return to_meta(at::TensorList(v.toTensorVector()));
  if (v.isOptionalTensorList()) return to_meta(v.toOptionalTensorList());
  return v;
}
