// CPU fallback for the device: every aten operator without a the device kernel is
// run on CPU (inputs copied to CPU, outputs copied back) by a boxed fallback
// registered for all operators on PrivateUse1.
//
// Note [Fallback accounting]: each fallback is counted per operator
// ("aten::addmm", "aten::add.out", c10's operator_name form), warned about
// once per operator, and refused in strict mode. The counts are what
// `torch_<device>.fallback_counts()` returns and what the conformance runner
// reads to tell "passed on our kernel" from "passed on CPU".
//
// Note [No views through the fallback]: the fallback runs an operator on CPU
// copies of its inputs and copies the results back to the device, so what it
// returns never shares storage with an input. For a view op (a return with an
// alias annotation that is not a write: `Tensor(a)`, `Tensor(a)[]`) that is
// a silent wrong result: a write through the "view" never reaches its base,
// nor a write to the base the view. An in-place view op (tag inplace_view:
// transpose_, squeeze_, as_strided_, ...) would rewrite the input's data in
// another layout under the views that share it. So both are refused, with
// the op's name and schema, before anything is copied: a view op must be
// native on the device (sizes, strides and an offset over the input's
// storage; csrc/aten/Shape.cpp, csrc/runtime/Minimal.cpp). In-place and out=
// ops (`Tensor(a!)` returns) are not views: the fallback writes their results
// back into the device tensors they name. A refused op is still counted, so
// the conformance runner's fallback check names it.
#include "runtime/Runtime.h"

#include <ATen/native/CPUFallback.h>
#include <torch/library.h>

#include <atomic>
#include <mutex>
#include <set>
#include <string>

namespace opgen_ref::runtime {
namespace {

std::mutex counts_mu;
std::map<std::string, int64_t>& counts() {
  static std::map<std::string, int64_t> m;
  return m;
}
// Operators already warned about: once per process, even across
// reset_fallback_counts(), so a test harness that resets often stays quiet.
std::set<std::string>& warned() {
  static std::set<std::string> s;
  return s;
}
std::atomic<bool> strict{false};

std::string op_name(const c10::OperatorHandle& op) {
  const auto& n = op.schema().operator_name();
  return n.overload_name.empty() ? n.name : n.name + "." + n.overload_name;
}

// Note [No views through the fallback].
bool returns_view(const c10::OperatorHandle& op) {
  if (op.hasTag(at::Tag::inplace_view)) return true;
  for (const auto& r : op.schema().returns()) {
    const auto* alias = r.alias_info();
    if (alias != nullptr && !alias->isWrite()) return true;
  }
  return false;
}

void cpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = op_name(op);
  if (returns_view(op)) {
    {
      std::lock_guard<std::mutex> g(counts_mu);
      ++counts()[name];
    }
    TORCH_CHECK(false, device_name(), ": operator '", name, "' is a view op (", op.schema(),
                ") with no ", device_name(), " kernel, and the CPU fallback cannot serve it: it would return a "
                "copy, so writes through the result would not reach its input. A view op must be native on the "
                "device: add it to backend.yaml and implement it as sizes, strides and a storage offset over the "
                "input's storage (as_strided)");
  }
  TORCH_CHECK(!strict.load(), device_name(), ": operator '", name,
              "' has no ", device_name(), " kernel and strict fallback mode is on (TORCH_", upper_device_name(), "_STRICT_FALLBACK=1 or "
              "torch_", device_name(), ".set_strict_fallback(True)); add it to backend.yaml and implement it, or turn "
              "strict mode off to run it on CPU");
  bool first = false;
  {
    std::lock_guard<std::mutex> g(counts_mu);
    ++counts()[name];
    first = warned().insert(name).second;
  }
  if (first) {
    TORCH_WARN(device_name(), ": operator '", name,
               "' has no ", device_name(), " kernel and falls back to CPU (slow). This is reported once per operator; "
               "see torch_", device_name(), ".fallback_counts().");
  }
  at::native::cpu_fallback(op, stack);
}

} // namespace

std::map<std::string, int64_t> fallback_counts() {
  std::lock_guard<std::mutex> g(counts_mu);
  return counts();
}

void reset_fallback_counts() {
  std::lock_guard<std::mutex> g(counts_mu);
  counts().clear();
}

void set_strict_fallback(bool on) { strict.store(on); }
bool strict_fallback() { return strict.load(); }

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&cpu_fallback>());
}

} // namespace opgen_ref::runtime
