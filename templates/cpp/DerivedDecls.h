// How copy_into_out checks an out= dtype (OutDtype, Note [Derived out dtype checks] in src/dest/plan.ts).
enum class OutDtype { kCastable, kEqual, kEqualIterator };
void copy_into_out(const at::Tensor& src, const at::Tensor& dst, OutDtype rule);
void copy_into_self(const at::Tensor& src, const at::Tensor& dst);
at::Tensor to_meta(const at::Tensor& t);
std::optional<at::Tensor> to_meta(const std::optional<at::Tensor>& t);
std::vector<at::Tensor> to_meta(at::TensorList ts);
c10::List<std::optional<at::Tensor>> to_meta(const c10::List<std::optional<at::Tensor>>& ts);
c10::IValue to_meta(const c10::IValue& v);
// Runs eager's meta function of a structured out= overload on meta copies of
// its arguments (Note [Derived out dtype checks]); generated once per overload.
using MetaCheck = void (*)(torch::jit::Stack& args);
// An argument of a MetaCheck as the meta function's parameter type T,
// converted as the dispatcher's own boxing converts it (a template, so
// defined here, in each file).
template <class T>
decltype(auto) meta_arg(c10::IValue& v) {
  return c10::impl::ivalue_to_arg<typename c10::impl::decay_if_not_tensor<T>::type, false>::call(v);
}
torch::CppFunction derived_out(c10::DispatchKey key, const char* functional, const char* overload, OutDtype rule,
                               MetaCheck meta);
torch::CppFunction derived_functional(c10::DispatchKey key, const char* out, const char* overload);
