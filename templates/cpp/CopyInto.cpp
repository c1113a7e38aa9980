// Note [Derived copies]: a derived overload writes the kernel's result into a
// caller's tensor with the checks ATen's own out=/inplace kernels make, so
// errors match eager CPU: an out= dtype as the overload's eager kernel wants
// it (Note [Derived out dtype checks] in src/dest/plan.ts), and for an
// inplace destination a dtype the result can be cast to (same-kind rule) and
// already the result's shape (inplace never resizes; out= does).
void copy_into_out(const at::Tensor& src, const at::Tensor& dst, OutDtype rule) {
  switch (rule) {
    case OutDtype::kCastable:
      TORCH_CHECK(c10::canCast(src.scalar_type(), dst.scalar_type()), "result type ", src.scalar_type(),
                  " can't be cast to the desired output type ", dst.scalar_type());
      break;
    case OutDtype::kEqual:
      TORCH_CHECK(src.dtype() == dst.dtype(), "Expected out tensor to have dtype ", src.dtype(), ", but got ",
                  dst.dtype(), " instead");
      break;
    case OutDtype::kEqualIterator:
      TORCH_CHECK(src.scalar_type() == dst.scalar_type(), "Found dtype ", dst.scalar_type(), " but expected ",
                  src.scalar_type());
      break;
  }
  at::_copy_from_and_resize(src, dst);
}

void copy_into_self(const at::Tensor& src, const at::Tensor& dst) {
  TORCH_CHECK(c10::canCast(src.scalar_type(), dst.scalar_type()), "result type ", src.scalar_type(),
              " can't be cast to the desired output type ", dst.scalar_type());
  TORCH_CHECK(src.sizes() == dst.sizes(), "output with shape ", dst.sizes(), " doesn't match the broadcast shape ",
              src.sizes());
  at::_copy_from(src, dst);
}
