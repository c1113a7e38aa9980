// Note [Derived out= overloads]: every out= overload derived from a
// functional kernel is served by this one boxed kernel instead of a typed
// wrapper each. For a structured overload it first runs eager's meta
// function on meta copies of the arguments (`meta`: Note [Derived out dtype
// checks], Note [Meta copies]). It calls the functional overload (on this
// dispatch key, as torchgen's wrapper calls the functional wrapper), then
// copies result i into the argument that return i aliases (copy_into_out
// with `rule` for out= arguments, copy_into_self for other mutated
// arguments), then any further results into the remaining mutated
// arguments, as FunctionSchema.signature() orders them. Arguments the
// functional has and the out= overload lacks are the factory options: dtype,
// layout and device come from the first out= tensor, pin_memory is None. One
// kernel for all of them saves a boxing template instantiation per overload
// (most of Register<Key>.cpp's compile time); an unboxed call to one of these
// overloads is boxed by the dispatcher first.
class DerivedOutKernel final : public c10::OperatorKernel {
 public:
  DerivedOutKernel(c10::DispatchKey key, const char* functional, const char* overload, OutDtype rule,
                   MetaCheck meta)
      : key_(key), functional_(functional), overload_(overload), rule_(rule), meta_(meta) {}

  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet /*ks*/, torch::jit::Stack* stack) {
    std::call_once(once_, [&] { plan(op.schema()); });
    const size_t n = op.schema().arguments().size();
    std::vector<c10::IValue> args(std::make_move_iterator(stack->end() - static_cast<std::ptrdiff_t>(n)),
                                  std::make_move_iterator(stack->end()));
    torch::jit::drop(*stack, n);
    if (meta_ != nullptr) {
      torch::jit::Stack meta;
      meta.reserve(n);
      for (const c10::IValue& v : args) meta.push_back(to_meta(v));
      meta_(meta);
    }
    for (const int64_t s : source_) {
      if (s >= 0) {
        stack->push_back(args[static_cast<size_t>(s)]);
        continue;
      }
      const at::Tensor& out = args[first_out_].toTensor();
      switch (s) {
        case kDtype:
          stack->emplace_back(out.scalar_type());
          break;
        case kLayout:
          stack->emplace_back(out.layout());
          break;
        case kDevice:
          stack->emplace_back(out.device());
          break;
        default:
          stack->emplace_back();
          break;
      }
    }
    handle_->redispatchBoxed(c10::DispatchKeySet(key_), stack);
    const size_t r = handle_->schema().returns().size();
    std::vector<c10::IValue> results(std::make_move_iterator(stack->end() - static_cast<std::ptrdiff_t>(r)),
                                     std::make_move_iterator(stack->end()));
    torch::jit::drop(*stack, r);
    TORCH_CHECK(results.size() == targets_.size(), op.schema().name(), ": the functional overload returned ",
                results.size(), " values, expected ", targets_.size());
    for (size_t i = 0; i < targets_.size(); ++i) {
      const int64_t t = targets_[i];
      if (t >= 0) copy_into(results[i], args[static_cast<size_t>(t)], is_out_[static_cast<size_t>(t)], rule_);
    }
    for (size_t j = 0; j < returns_.size(); ++j) {
      const int64_t t = returns_[j];
      stack->push_back(t >= 0 ? args[static_cast<size_t>(t)] : results[j]);
    }
  }

 private:
  static constexpr int64_t kDtype = -2, kLayout = -3, kDevice = -4, kPinMemory = -5;

  static void copy_into(const c10::IValue& src, const c10::IValue& dst, bool out, OutDtype rule) {
    if (dst.isTensor()) {
      copy_tensor(src.toTensor(), dst.toTensor(), out, rule);
      return;
    }
    const std::vector<at::Tensor> from = src.toTensorVector();
    const std::vector<at::Tensor> to = dst.toTensorVector();
    TORCH_CHECK(from.size() == to.size(), "expected ", from.size(), " tensors in an out= list, got ", to.size());
    for (size_t i = 0; i < to.size(); ++i) copy_tensor(from[i], to[i], out, rule);
  }

  static void copy_tensor(const at::Tensor& src, const at::Tensor& dst, bool out, OutDtype rule) {
    if (out) {
      copy_into_out(src, dst, rule);
    } else {
      copy_into_self(src, dst);
    }
  }

  static bool same_alias(const c10::AliasInfo* a, const c10::AliasInfo* b) {
    return a != nullptr && b != nullptr && a->isWrite() && *a == *b;
  }

  void plan(const c10::FunctionSchema& schema) {
    handle_ = c10::Dispatcher::singleton().findSchemaOrThrow(functional_, overload_);
    const auto& args = schema.arguments();
    is_out_.resize(args.size());
    for (size_t i = 0; i < args.size(); ++i) is_out_[i] = args[i].is_out();
    first_out_ = args.size();
    for (size_t i = 0; i < args.size(); ++i) {
      if (is_out_[i]) {
        first_out_ = i;
        break;
      }
    }
    for (const auto& a : handle_->schema().arguments()) {
      const std::optional<int> i = schema.argumentIndexWithName(a.name());
      if (i.has_value()) {
        source_.push_back(*i);
        continue;
      }
      TORCH_INTERNAL_ASSERT(first_out_ < args.size(), schema.name(), ": no out= tensor to take '", a.name(), "' from");
      const std::string& nm = a.name();
      source_.push_back(nm == "dtype" ? kDtype : nm == "layout" ? kLayout : nm == "device" ? kDevice : kPinMemory);
    }
    // Mutated arguments in FunctionSchema.signature() order: self, out=, then other positional ones.
    std::vector<int64_t> mutated;
    const auto write = [&](size_t i) { return args[i].alias_info() != nullptr && args[i].alias_info()->isWrite(); };
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].name() == "self" && write(i)) mutated.push_back(static_cast<int64_t>(i));
    for (size_t i = 0; i < args.size(); ++i)
      if (is_out_[i] && write(i)) mutated.push_back(static_cast<int64_t>(i));
    for (size_t i = 0; i < args.size(); ++i)
      if (!is_out_[i] && args[i].name() != "self" && write(i)) mutated.push_back(static_cast<int64_t>(i));
    std::vector<bool> returned(args.size(), false);
    for (const auto& ret : schema.returns()) {
      int64_t t = -1;
      for (const int64_t m : mutated) {
        if (same_alias(ret.alias_info(), args[static_cast<size_t>(m)].alias_info())) t = m;
      }
      if (t >= 0) returned[static_cast<size_t>(t)] = true;
      returns_.push_back(t);
      targets_.push_back(t);
    }
    for (const int64_t m : mutated) {
      if (!returned[static_cast<size_t>(m)]) targets_.push_back(m);
    }
  }

  c10::DispatchKey key_;
  const char* functional_;
  const char* overload_;
  OutDtype rule_;
  // Null but for a structured overload.
  MetaCheck meta_;
  std::once_flag once_;
  std::optional<c10::OperatorHandle> handle_;
  size_t first_out_ = 0;
  std::vector<int64_t> source_;
  std::vector<bool> is_out_;
  // For each functional result: the argument it is copied into, or -1.
  std::vector<int64_t> targets_;
  // For each return of the out= overload: the argument it aliases, or -1 (a functional result).
  std::vector<int64_t> returns_;
};

torch::CppFunction derived_out(c10::DispatchKey key, const char* functional, const char* overload, OutDtype rule,
                               MetaCheck meta) {
  return torch::CppFunction::makeFromBoxedFunctor(
      std::make_unique<DerivedOutKernel>(key, functional, overload, rule, meta));
}
