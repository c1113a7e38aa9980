// Note [Functional from out]: with `use_out_as_primary: true`, a functional
// overload whose group has an out= kernel is served by this boxed kernel. The
// result's sizes, strides and dtype come from running the functional overload
// on the Meta device (Meta kernels compute shapes only, no data) with meta
// copies of the arguments (Note [Meta copies]); outputs are allocated on the
// device of the first tensor argument (or the `device` argument of a
// factory), the out= overload is called on this dispatch key, and the outputs
// are returned. An operator without a Meta kernel reports that when called.
// Unboxed calls are boxed by the dispatcher first.
class DerivedFunctionalKernel final : public c10::OperatorKernel {
 public:
  DerivedFunctionalKernel(c10::DispatchKey key, const char* out, const char* overload)
      : key_(key), out_(out), overload_(overload) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet /*ks*/, torch::jit::Stack* stack) {
    std::call_once(once_, [&] { out_handle_ = c10::Dispatcher::singleton().findSchemaOrThrow(out_, overload_); });
    const auto& schema = op.schema();
    const size_t n = schema.arguments().size();
    std::vector<c10::IValue> args(std::make_move_iterator(stack->end() - static_cast<std::ptrdiff_t>(n)),
                                  std::make_move_iterator(stack->end()));
    torch::jit::drop(*stack, n);

    std::optional<c10::Device> device;
    torch::jit::Stack meta;
    for (size_t i = 0; i < n; ++i) {
      const c10::IValue& v = args[i];
      if (schema.arguments()[i].name() == "device" && !v.isNone() && v.isDevice()) {
        device = v.toDevice();
        meta.emplace_back(c10::Device(c10::kMeta));
        continue;
      }
      if (!device.has_value()) device = device_of(v);
      meta.push_back(to_meta(v));
    }
    TORCH_CHECK(device.has_value(), schema.name(), ": cannot tell which device the result belongs on");
    op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::Meta), &meta);

    // out= call: the functional's arguments by name, then fresh outputs.
    const auto& out_schema = out_handle_->schema();
    std::vector<c10::IValue> outs;
    size_t r = 0;
    for (const auto& a : out_schema.arguments()) {
      if (a.is_out()) {
        TORCH_CHECK(r < meta.size(), out_schema.name(), ": more out= arguments than functional results");
        outs.push_back(like(meta[r++], *device));
        stack->push_back(outs.back());
        continue;
      }
      const std::optional<int> i = schema.argumentIndexWithName(a.name());
      TORCH_INTERNAL_ASSERT(i.has_value(), out_schema.name(), ": no functional argument '", a.name(), "'");
      stack->push_back(args[static_cast<size_t>(*i)]);
    }
    out_handle_->redispatchBoxed(c10::DispatchKeySet(key_), stack);
    torch::jit::drop(*stack, out_schema.returns().size());
    for (auto& o : outs) stack->push_back(std::move(o));
  }

 private:
  static std::optional<c10::Device> device_of(const c10::IValue& v) {
    if (v.isTensor() && v.toTensor().defined()) return v.toTensor().device();
    if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) {
        if (t.defined()) return t.device();
      }
    }
    return std::nullopt;
  }

  static c10::IValue like(const c10::IValue& m, c10::Device device) {
    if (m.isTensor()) {
      const at::Tensor& t = m.toTensor();
      return at::empty_strided(t.sizes(), t.strides(), t.options().device(device));
    }
    std::vector<at::Tensor> ts;
    for (const at::Tensor& t : m.toTensorVector()) {
      ts.push_back(at::empty_strided(t.sizes(), t.strides(), t.options().device(device)));
    }
    return ts;
  }

  c10::DispatchKey key_;
  const char* out_;
  const char* overload_;
  std::once_flag once_;
  std::optional<c10::OperatorHandle> out_handle_;
};

torch::CppFunction derived_functional(c10::DispatchKey key, const char* out, const char* overload) {
  return torch::CppFunction::makeFromBoxedFunctor(std::make_unique<DerivedFunctionalKernel>(key, out, overload));
}
