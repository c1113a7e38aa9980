// The device's c10d collective backend: what torch.distributed calls for
// tensors on the device (all_reduce, all_gather, DDP's bucket all-reduces,
// FSDP's all-gathers and reduce-scatters, send/recv...). The collectives run
// on an existing engine, Gloo over TCP (ProcessGroupGloo, made in Python by
// the package's _distributed.py and handed in here), so the backend works
// across machines with no transport of its own.
//
// Note [Collective staging]: Gloo computes on host memory, so each
// collective stages its device tensors through the driver:
//   1. caller's thread: every device input is copied to a pinned host buffer
//      (Note [Staging buffers]; refMemcpyAsync on the current stream; non-contiguous inputs are made
//      contiguous on the device first), then the stream is synchronized so
//      Gloo reads finished buffers, and the Gloo collective is issued. Issuing
//      in the caller's thread keeps Gloo's per-collective tags in program
//      order on every rank.
//   2. completion (a thread of this backend, or the first wait()): the Gloo
//      work is waited for; the host results are copied into the device
//      tensors on the stream that was current at the call (through a
//      contiguous device buffer and the device's copy_ for non-contiguous
//      outputs), the stream is synchronized, and the Work and its Future
//      complete. A failed Gloo work fails the Work: wait() rethrows Gloo's
//      exception, the Future carries it.
// CPU tensors go straight to Gloo (the backend is registered for "cpu" too,
// so init_process_group("<device>ccl") alone also serves barrier() and the
// object collectives), and Gloo's own refusals (ReduceOp.AVG, a dtype it
// lacks) reach the caller unchanged. Sizes that differ across ranks, which
// Gloo cannot refuse (it aborts), are found first by an exchange of
// fingerprints (Note [Collective fingerprints]).
//
// What a vendor with its own collective library (HCCL, CNCL, NCCL) replaces:
// the staging, DeviceWork's completion thread and the Gloo calls, by
// collectives enqueued on a communication stream over device memory (the
// driver-level calls it needs: communicator init from a unique id exchanged
// through the c10d Store, per-op launches on a stream, an event the caller's
// stream waits on in Work::wait/synchronize, and an abort). What stays: the
// c10d::Backend surface below, its registration in Python, and the tests.
// The CUDA reference device stages through this same path: the CPU torch
// build this project pins has no NCCL (torch.distributed.is_nccl_available()
// is False), so there is no NCCL backend to hand CUDA tensors to.
// GCC's -Wmaybe-uninitialized misfires at -O1 (the sanitized build, `build
// --sanitize`) on torch's c10::ivalue::Future::invokeCallback, inlined here:
// the OptionalDeviceGuard it fills only when the future has a device. The
// warning is reported at the header's lines, so it is silenced for the
// headers alone; this file's own code keeps it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "runtime/Distributed.h"

#include "runtime/Runtime.h"

#include <ATen/EmptyTensor.h>
#include <ATen/core/ivalue.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/tensor.h>
#include <c10/core/DeviceGuard.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/csrc/utils/pybind.h>
#pragma GCC diagnostic pop

#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace opgen_ref::runtime {
namespace {

using c10d::OpType;
using c10d::Work;
using Tensors = std::vector<at::Tensor>;

// Note [Staging buffers]: a collective's host buffers come from a small cache
// of pinned blocks (by exact size, 1 GiB at most kept), so the buffers of a
// training loop's repeated collectives (DDP's buckets, FSDP's shards) are
// pinned and paged in once, not on every call. Blocks go back when the last
// tensor holding them dies; the pool is never destroyed (tensors may outlive
// every backend).
class StagingPool final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    if (nbytes == 0) return {nullptr, nullptr, &noop, c10::Device(c10::DeviceType::CPU)};
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> g(mu_);
      auto it = free_.find(nbytes);
      if (it != free_.end()) {
        p = it->second;
        free_.erase(it);
        kept_ -= nbytes;
      }
    }
    if (p == nullptr) driver_check(refMallocHost(&p, nbytes), "pinned staging buffer");
    auto* block = new Block{this, p, nbytes};
    return {p, block, &give_back, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }
  void copy_data(void* dest, const void* src, size_t count) const override { memcpy_any(dest, src, count); }

 private:
  struct Block {
    StagingPool* pool;
    void* ptr;
    size_t size;
  };
  static constexpr size_t kKeep = size_t{1} << 30;

  static void noop(void*) {}
  static void give_back(void* ctx) {
    auto* b = static_cast<Block*>(ctx);
    StagingPool* pool = b->pool;
    bool keep = false;
    {
      std::lock_guard<std::mutex> g(pool->mu_);
      if (pool->kept_ + b->size <= kKeep) {
        pool->free_.emplace(b->size, b->ptr);
        pool->kept_ += b->size;
        keep = true;
      }
    }
    if (!keep) refFreeHost(b->ptr);
    delete b;
  }

  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  size_t kept_ = 0;
};

StagingPool& staging_pool() {
  static auto* pool = new StagingPool();  // never destroyed (Note [Staging buffers])
  return *pool;
}

bool on_device(const at::Tensor& t) { return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1; }

size_t nbytes_of(const at::Tensor& t) { return static_cast<size_t>(t.numel()) * t.element_size(); }

// The host and device sides of one collective (Note [Collective staging]).
class Staging {
 public:
  // A host tensor holding t's values (t itself for a CPU tensor).
  at::Tensor input(const at::Tensor& t) {
    if (!on_device(t)) return t;
    note_device(t);
    at::Tensor host = host_like(t);
    c10::DeviceGuard g(t.device());
    at::Tensor src = t.is_contiguous() ? t : t.contiguous();
    if (nbytes_of(t) != 0) memcpy_any_async(host.data_ptr(), src.data_ptr(), nbytes_of(t));
    keep_.push_back(src);
    keep_.push_back(host);
    return host;
  }

  // A host tensor whose values become t's when the collective is done.
  at::Tensor output(const at::Tensor& t) {
    if (!on_device(t)) return t;
    note_device(t);
    at::Tensor host = host_like(t);
    back_.emplace_back(host, t);
    return host;
  }

  // Both: the collectives that work in place (all_reduce, broadcast, reduce).
  at::Tensor inout(const at::Tensor& t) {
    at::Tensor host = input(t);
    if (on_device(t)) back_.emplace_back(host, t);
    return host;
  }

  Tensors inputs(const Tensors& ts) { return map(ts, &Staging::input); }
  Tensors outputs(const Tensors& ts) { return map(ts, &Staging::output); }
  Tensors inouts(const Tensors& ts) { return map(ts, &Staging::inout); }
  std::vector<Tensors> outputs(const std::vector<Tensors>& tss) {
    std::vector<Tensors> r;
    for (const auto& ts : tss) r.push_back(outputs(ts));
    return r;
  }
  std::vector<Tensors> inputs(const std::vector<Tensors>& tss) {
    std::vector<Tensors> r;
    for (const auto& ts : tss) r.push_back(inputs(ts));
    return r;
  }
  // One name for all three shapes (a tensor, a list, a list of lists), for
  // DeviceBackend::out_of_place.
  at::Tensor in(const at::Tensor& t) { return input(t); }
  Tensors in(const Tensors& ts) { return inputs(ts); }
  std::vector<Tensors> in(const std::vector<Tensors>& tss) { return inputs(tss); }
  at::Tensor out(const at::Tensor& t) { return output(t); }
  Tensors out(const Tensors& ts) { return outputs(ts); }
  std::vector<Tensors> out(const std::vector<Tensors>& tss) { return outputs(tss); }

  bool staged() const { return stream_.has_value(); }

  // Caller's thread, before Gloo reads the host buffers.
  void wait_for_inputs() {
    c10::StreamGuard g(*stream_);
    driver_check(refStreamSynchronize(current_stream()), "stream synchronize before a collective");
  }

  // Any thread, after Gloo wrote the host buffers.
  void copy_back() {
    if (back_.empty()) return;
    c10::StreamGuard g(*stream_);
    at::NoGradGuard no_grad;  // an output may be a leaf that requires grad
    for (auto& [host, dev] : back_) {
      const size_t n = nbytes_of(dev);
      if (n == 0) continue;
      if (dev.is_contiguous()) {
        memcpy_any_async(dev.data_ptr(), host.data_ptr(), n);
      } else {
        at::Tensor tmp = at::empty(dev.sizes(), dev.options());
        memcpy_any_async(tmp.data_ptr(), host.data_ptr(), n);
        dev.copy_(tmp);
        keep_.push_back(tmp);
      }
    }
    driver_check(refStreamSynchronize(current_stream()), "stream synchronize after a collective");
  }

 private:
  Tensors map(const Tensors& ts, at::Tensor (Staging::*f)(const at::Tensor&)) {
    Tensors r;
    r.reserve(ts.size());
    for (const auto& t : ts) r.push_back((this->*f)(t));
    return r;
  }

  void note_device(const at::Tensor& t) {
    if (!stream_) {
      stream_ = c10::impl::VirtualGuardImpl(c10::DeviceType::PrivateUse1).getStream(t.device());
      return;
    }
    TORCH_CHECK(t.device() == stream_->device(), device_name(), "ccl: the tensors of one collective must be on one device; got ",
                stream_->device(), " and ", t.device());
  }

  static at::Tensor host_like(const at::Tensor& t) {
    return at::detail::empty_generic(t.sizes(), &staging_pool(), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                     t.scalar_type(), std::nullopt);
  }

  std::optional<c10::Stream> stream_;
  std::vector<std::pair<at::Tensor, at::Tensor>> back_;  // (host, device)
  Tensors keep_;  // alive until the collective is done (Gloo and the copies read them)
};

// A collective on device tensors: the Gloo work on the host buffers, then the
// copies back (Note [Collective staging]).
class DeviceWork final : public Work {
 public:
  DeviceWork(int rank, OpType type, c10::intrusive_ptr<Work> inner, Staging staging, Tensors outputs)
      : Work(rank, type),
        inner_(std::move(inner)),
        staging_(std::move(staging)),
        outputs_(std::move(outputs)),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

  // Waits for Gloo and copies the results back, once; whichever thread comes
  // first (the completion thread, wait()) does it, the other waits for it.
  void complete(std::chrono::milliseconds timeout) {
    std::exception_ptr error;
    {
      std::lock_guard<std::mutex> once(complete_mu_);
      if (isCompleted()) return;
      try {
        TORCH_CHECK(inner_->wait(timeout), device_name(), "ccl: the collective was aborted");
        staging_.copy_back();
      } catch (...) {
        error = std::current_exception();
      }
      finish(error);
    }
    // Outside the lock: the future's callbacks (DDP's comm hooks) may wait on this work.
    if (error) {
      future_->setError(error);
    } else {
      future_->markCompleted(c10::IValue(outputs_));
    }
  }

  bool wait(std::chrono::milliseconds timeout) override {
    complete(timeout);
    std::lock_guard<std::mutex> g(mutex_);
    if (exception_) std::rethrow_exception(exception_);
    return true;
  }

  void synchronize() override {}  // the copies back are synchronized before the work completes
  void blockCurrentStream() override { wait(::kNoTimeout); }
  int sourceRank() const override { return inner_->sourceRank(); }
  std::vector<at::Tensor> result() override { return outputs_; }
  void abort() override { inner_->abort(); }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  c10::intrusive_ptr<Work> inner_;
  Staging staging_;
  Tensors outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::mutex complete_mu_;
};

// Completes staged works in issue order, so Futures complete without anyone
// calling wait() (DDP reads its buckets through them).
class Completer {
 public:
  ~Completer() { stop(); }

  void push(c10::intrusive_ptr<DeviceWork> w) {
    std::lock_guard<std::mutex> g(mu_);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    queue_.push_back(std::move(w));
    cv_.notify_one();
  }

  void stop() {
    {
      std::lock_guard<std::mutex> g(mu_);
      stopping_ = true;
      cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    for (;;) {
      c10::intrusive_ptr<DeviceWork> w;
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left to complete
        w = std::move(queue_.front());
        queue_.pop_front();
      }
      w->complete(::kNoTimeout);
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<c10::intrusive_ptr<DeviceWork>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

// Note [Collective fingerprints]: Gloo cannot survive a collective whose
// sizes differ across ranks: its transport thread enforces the byte count it
// receives ("Received data size doesn't match expected size") and the
// process aborts, with no Python error and no word of which collective or
// which rank. So before each collective whose sizes must agree, every rank
// sends the others a fingerprint of it, a fixed-size int64 record (so the
// exchange itself can never mismatch): what it runs (the collective, its
// root), and the dtype and sizes of the tensors that must agree (the first
// kDescribed in full, all of them in a hash). The exchange is one all_gather
// of the record on a second Gloo group of the same ranks (made by
// _distributed.py; its own connections, so it never queues behind a large
// collective of the data group), waited for in the caller's thread. Every
// rank compares all the records it gathered, so every rank sees a mismatch
// and raises (naming the collective, itself and the first differing rank,
// and both ranks' tensors) before any of them issues the collective; a rank
// that never comes makes the exchange time out (the group's timeout), as the
// collective would.
//   This is c10d's ProcessGroupWrapper check (TORCH_DISTRIBUTED_DEBUG=DETAIL,
// torch/csrc/distributed/c10d/ProcessGroupWrapper.cpp), always on and in one
// round trip instead of the wrapper's two (it all-gathers the records' length
// first, as its records vary in size). What must agree is what Gloo needs:
// all_reduce, broadcast and reduce their tensors (and the root), all_gather
// and gather their inputs, scatter its outputs, all_gather_into_tensor and the
// reduce_scatters both sides; all_to_all only the collective (its splits
// legitimately differ per rank), send/recv nothing (no group-wide exchange),
// barrier nothing. Its cost is one small all_gather per collective: a fixed
// latency that matters for small collectives only. Measured with
// bench/distributed.py (all_reduce, world size 2, device/Gloo-on-CPU time,
// wall clock, 2 shared cores at load ~1, runs alternated with the build
// before the check): 64 MB 1.51x/1.55x without, 1.32x/1.40x with (noise
// larger than the check); 1 MB 1.01x/1.26x without, 1.28x/2.05x with (about
// 1 ms more at most). TORCH_<DEVICE>CCL_SHAPE_CHECK=0 turns it off (the
// second group is then not made). A vendor's own collective library keeps it as it is: it is
// a host-side exchange over the Gloo group beside the library's
// communicator, as NCCL's users get it from the wrapper.
constexpr int64_t kFingerprintTag = 0x6f70676e66700001;  // "opgnfp" and a version
constexpr size_t kDescribed = 3;                          // tensors described in full
constexpr size_t kDims = 8;                               // dims described per tensor
constexpr size_t kHead = 5;                               // tag, collective, root, count, hash
constexpr size_t kPerTensor = 2 + kDims;                  // dtype, ndim, sizes
constexpr size_t kRecord = kHead + kDescribed * kPerTensor;

// The collectives a fingerprint names (its record holds the index).
enum class Collective : int64_t {
  broadcast,
  all_reduce,
  all_reduce_coalesced,
  reduce,
  all_gather,
  all_gather_into_tensor,
  all_gather_coalesced,
  all_gather_into_tensor_coalesced,
  gather,
  scatter,
  reduce_scatter,
  reduce_scatter_tensor,
  reduce_scatter_tensor_coalesced,
  all_to_all_single,
  all_to_all,
};

const char* collective_name(int64_t c) {
  static const char* const names[] = {
      "broadcast",         "all_reduce",    "all_reduce (coalesced)", "reduce",
      "all_gather",        "all_gather_into_tensor", "all_gather (coalesced)",
      "all_gather_into_tensor (coalesced)", "gather", "scatter", "reduce_scatter",
      "reduce_scatter_tensor", "reduce_scatter_tensor (coalesced)", "all_to_all_single", "all_to_all"};
  constexpr int64_t n = static_cast<int64_t>(sizeof(names) / sizeof(names[0]));
  return c >= 0 && c < n ? names[c] : "an unknown collective";
}

// A dtype as Python names it (torch.float32 -> "float32"), for the mismatch error.
std::string dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Float: return "float32";
    case c10::ScalarType::Double: return "float64";
    case c10::ScalarType::Half: return "float16";
    case c10::ScalarType::BFloat16: return "bfloat16";
    case c10::ScalarType::Long: return "int64";
    case c10::ScalarType::Int: return "int32";
    case c10::ScalarType::Short: return "int16";
    case c10::ScalarType::Char: return "int8";
    case c10::ScalarType::Byte: return "uint8";
    case c10::ScalarType::Bool: return "bool";
    case c10::ScalarType::ComplexFloat: return "complex64";
    case c10::ScalarType::ComplexDouble: return "complex128";
    default: return c10::toString(t);
  }
}

class Fingerprint {
 public:
  Fingerprint(Collective c, int64_t root) : record_(kRecord, 0) {
    record_[0] = kFingerprintTag;
    record_[1] = static_cast<int64_t>(c);
    record_[2] = root;
  }

  Fingerprint& add(const at::Tensor& t) {
    const size_t i = static_cast<size_t>(record_[3]++);
    const auto sizes = t.sizes();
    mix(static_cast<int64_t>(t.scalar_type()));
    mix(static_cast<int64_t>(sizes.size()));
    for (int64_t s : sizes) mix(s);
    if (i < kDescribed) {
      int64_t* d = &record_[kHead + i * kPerTensor];
      d[0] = static_cast<int64_t>(t.scalar_type());
      d[1] = static_cast<int64_t>(sizes.size());
      for (size_t k = 0; k < sizes.size() && k < kDims; ++k) d[2 + k] = sizes[k];
    }
    return *this;
  }
  Fingerprint& add(const Tensors& ts) {
    for (const auto& t : ts) add(t);
    return *this;
  }
  Fingerprint& add(const std::vector<Tensors>& tss) {
    for (const auto& ts : tss) add(ts);
    return *this;
  }

  // All-gathers the records over `check` and raises on every rank if any differs.
  void verify(c10d::Backend& check) const {
    at::Tensor mine = at::tensor(record_, at::kLong);
    std::vector<Tensors> all(1);
    for (int r = 0; r < check.getSize(); ++r) all[0].push_back(at::empty_like(mine));
    Tensors in{mine};
    check.allgather(all, in)->wait();
    for (int r = 0; r < check.getSize(); ++r) {
      if (all[0][r].equal(mine)) continue;
      const int64_t* theirs = all[0][r].const_data_ptr<int64_t>();
      TORCH_CHECK(false, device_name(), "ccl: ", describe_mismatch(check.getRank(), r, theirs));
    }
  }

 private:
  void mix(int64_t v) {  // FNV-1a over the tensors' dtypes and sizes
    auto h = static_cast<uint64_t>(record_[4]);
    if (h == 0) h = 1469598103934665603ull;
    for (int b = 0; b < 8; ++b) h = (h ^ ((static_cast<uint64_t>(v) >> (8 * b)) & 0xff)) * 1099511628211ull;
    record_[4] = static_cast<int64_t>(h);
  }

  static std::string tensors_of(const int64_t* r) {
    std::string s;
    const int64_t n = r[3];
    for (int64_t i = 0; i < n && i < static_cast<int64_t>(kDescribed); ++i) {
      const int64_t* d = r + kHead + i * kPerTensor;
      s += i ? ", " : "";
      s += dtype_name(static_cast<c10::ScalarType>(d[0]));
      s += "[";
      for (int64_t k = 0; k < d[1]; ++k) {
        s += k ? ", " : "";
        s += k < static_cast<int64_t>(kDims) ? std::to_string(d[2 + k]) : "...";
        if (k >= static_cast<int64_t>(kDims)) break;
      }
      s += "]";
    }
    if (n > static_cast<int64_t>(kDescribed)) s += ", ... (" + std::to_string(n) + " tensors)";
    return n == 1 ? s : "(" + s + ")";
  }

  std::string describe_mismatch(int me, int other, const int64_t* theirs) const {
    const int64_t* mine = record_.data();
    const std::string where = "rank " + std::to_string(me) + " runs ";
    const std::string tail =
        " (Note [Collective fingerprints]: checked before every collective; TORCH_" + upper_device_name() +
        "CCL_SHAPE_CHECK=0 turns the check off)";
    if (theirs[0] != kFingerprintTag) {
      return where + collective_name(mine[1]) + ", rank " + std::to_string(other) +
             " sent no fingerprint of this version (a different build of the backend, or the check turned off there)" +
             tail;
    }
    if (theirs[1] != mine[1]) {
      return where + collective_name(mine[1]) + " while rank " + std::to_string(other) + " runs " +
             collective_name(theirs[1]) + ": every rank must call the same collectives in the same order" + tail;
    }
    if (theirs[2] != mine[2]) {
      return collective_name(mine[1]) + std::string(": rank ") + std::to_string(me) + " names root " +
             std::to_string(mine[2]) + ", rank " + std::to_string(other) + " root " + std::to_string(theirs[2]) + tail;
    }
    std::string msg = collective_name(mine[1]) + std::string(": mismatched shapes or dtypes across ranks: rank ") +
                      std::to_string(me) + " has " + tensors_of(mine) + ", rank " + std::to_string(other) + " has " +
                      tensors_of(theirs);
    if (tensors_of(mine) == tensors_of(theirs)) msg += " (they differ past the tensors shown)";
    return msg + "; the tensors must have the same dtypes and shapes on every rank" + tail;
  }

  std::vector<int64_t> record_;
};

class DeviceBackend final : public c10d::Backend {
 public:
  // `check`: the Gloo group of the same ranks that exchanges the
  // fingerprints (Note [Collective fingerprints]); null: no check.
  DeviceBackend(c10::intrusive_ptr<c10d::Backend> gloo, c10::intrusive_ptr<c10d::Backend> check, int rank, int size)
      : Backend(rank, size), gloo_(std::move(gloo)), check_(std::move(check)) {
    TORCH_CHECK(gloo_, device_name(), "ccl: needs a Gloo backend to run its collectives on");
    for (const auto* g : {&gloo_, &check_}) {
      if (!*g) continue;
      TORCH_CHECK((*g)->getRank() == rank && (*g)->getSize() == size, device_name(), "ccl: the Gloo backend is rank ",
                  (*g)->getRank(), " of ", (*g)->getSize(), ", this one rank ", rank, " of ", size);
    }
    init();
  }

  ~DeviceBackend() override { completer_.stop(); }

  const std::string getBackendName() const override { return device_name() + "ccl"; }
  c10::intrusive_ptr<Options> getBackendOptions() override { return gloo_->getBackendOptions(); }
  void setTimeout(std::chrono::milliseconds timeout) override {
    gloo_->setTimeout(timeout);
    if (check_) check_->setTimeout(timeout);
  }
  void setGroupUid(const std::string& uid) override {
    Backend::setGroupUid(uid);
    gloo_->setGroupUid(uid);
  }
  void setSequenceNumberForGroup() override { gloo_->setSequenceNumberForGroup(); }
  uint64_t getSequenceNumberForGroup() override { return gloo_->getSequenceNumberForGroup(); }
  void enableCollectivesTiming() override { gloo_->enableCollectivesTiming(); }
  void abort() override {
    if (check_) check_->abort();
    gloo_->abort();
  }
  void shutdown() override {
    if (check_) check_->shutdown();
    gloo_->shutdown();
    completer_.stop();
  }

  c10::intrusive_ptr<Work> broadcast(Tensors& tensors, const c10d::BroadcastOptions& opts) override {
    verify(Fingerprint(Collective::broadcast, opts.rootRank).add(tensors));
    Staging s;
    // Only the root's values are read; the others' are only written.
    Tensors h = getRank() == opts.rootRank ? s.inputs(tensors) : s.outputs(tensors);
    return run(OpType::BROADCAST, std::move(s), tensors, [&] { return gloo_->broadcast(h, opts); });
  }

  c10::intrusive_ptr<Work> allreduce(Tensors& tensors, const c10d::AllreduceOptions& opts) override {
    verify(Fingerprint(Collective::all_reduce, -1).add(tensors));
    return in_place(OpType::ALLREDUCE, tensors, [&](Tensors& h) { return gloo_->allreduce(h, opts); });
  }

  c10::intrusive_ptr<Work> allreduce_coalesced(Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    verify(Fingerprint(Collective::all_reduce_coalesced, -1).add(tensors));
    return in_place(OpType::ALLREDUCE_COALESCED, tensors, [&](Tensors& h) { return gloo_->allreduce_coalesced(h, opts); });
  }

  c10::intrusive_ptr<Work> reduce(Tensors& tensors, const c10d::ReduceOptions& opts) override {
    verify(Fingerprint(Collective::reduce, opts.rootRank).add(tensors));
    // Every rank's tensor is copied back, as Gloo leaves it (the root's holds the result).
    return in_place(OpType::REDUCE, tensors, [&](Tensors& h) { return gloo_->reduce(h, opts); });
  }

  c10::intrusive_ptr<Work> allgather(std::vector<Tensors>& outputs, Tensors& inputs,
                                     const c10d::AllgatherOptions& opts) override {
    verify(Fingerprint(Collective::all_gather, -1).add(inputs));
    return out_of_place(OpType::ALLGATHER, outputs, inputs, [&](auto& o, auto& i) { return gloo_->allgather(o, i, opts); });
  }

  c10::intrusive_ptr<Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                           const c10d::AllgatherOptions& opts) override {
    verify(Fingerprint(Collective::all_gather_into_tensor, -1).add(input).add(output));
    return out_of_place(OpType::_ALLGATHER_BASE, output, input,
                        [&](auto& o, auto& i) { return gloo_->_allgather_base(o, i, opts); });
  }

  c10::intrusive_ptr<Work> allgather_coalesced(std::vector<Tensors>& outputs, Tensors& inputs,
                                               const c10d::AllgatherOptions& opts) override {
    verify(Fingerprint(Collective::all_gather_coalesced, -1).add(inputs));
    return out_of_place(OpType::ALLGATHER_COALESCED, outputs, inputs,
                        [&](auto& o, auto& i) { return gloo_->allgather_coalesced(o, i, opts); });
  }

  c10::intrusive_ptr<Work> allgather_into_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                                           const c10d::AllgatherOptions& opts) override {
    verify(Fingerprint(Collective::all_gather_into_tensor_coalesced, -1).add(inputs).add(outputs));
    return out_of_place(OpType::COALESCED, outputs, inputs,
                        [&](auto& o, auto& i) { return gloo_->allgather_into_tensor_coalesced(o, i, opts); });
  }

  c10::intrusive_ptr<Work> gather(std::vector<Tensors>& outputs, Tensors& inputs, const c10d::GatherOptions& opts) override {
    // Only the root has outputs: the inputs are what every rank must agree on.
    verify(Fingerprint(Collective::gather, opts.rootRank).add(inputs));
    return out_of_place(OpType::GATHER, outputs, inputs, [&](auto& o, auto& i) { return gloo_->gather(o, i, opts); });
  }

  c10::intrusive_ptr<Work> scatter(Tensors& outputs, std::vector<Tensors>& inputs, const c10d::ScatterOptions& opts) override {
    verify(Fingerprint(Collective::scatter, opts.rootRank).add(outputs));
    return out_of_place(OpType::SCATTER, outputs, inputs, [&](auto& o, auto& i) { return gloo_->scatter(o, i, opts); });
  }

  c10::intrusive_ptr<Work> reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                          const c10d::ReduceScatterOptions& opts) override {
    verify(Fingerprint(Collective::reduce_scatter, -1).add(outputs).add(inputs));
    return out_of_place(OpType::REDUCE_SCATTER, outputs, inputs,
                        [&](auto& o, auto& i) { return gloo_->reduce_scatter(o, i, opts); });
  }

  c10::intrusive_ptr<Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                const c10d::ReduceScatterOptions& opts) override {
    verify(Fingerprint(Collective::reduce_scatter_tensor, -1).add(input).add(output));
    return out_of_place(OpType::_REDUCE_SCATTER_BASE, output, input,
                        [&](auto& o, auto& i) { return gloo_->_reduce_scatter_base(o, i, opts); });
  }

  c10::intrusive_ptr<Work> reduce_scatter_tensor_coalesced(Tensors& outputs, Tensors& inputs,
                                                           const c10d::ReduceScatterOptions& opts) override {
    verify(Fingerprint(Collective::reduce_scatter_tensor_coalesced, -1).add(inputs).add(outputs));
    return out_of_place(OpType::COALESCED, outputs, inputs,
                        [&](auto& o, auto& i) { return gloo_->reduce_scatter_tensor_coalesced(o, i, opts); });
  }

  c10::intrusive_ptr<Work> alltoall_base(at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                                         std::vector<int64_t>& input_splits, const c10d::AllToAllOptions& opts) override {
    verify(Fingerprint(Collective::all_to_all_single, -1));  // the splits differ per rank
    return out_of_place(OpType::ALLTOALL_BASE, output, input, [&](auto& o, auto& i) {
      return gloo_->alltoall_base(o, i, output_splits, input_splits, opts);
    });
  }

  c10::intrusive_ptr<Work> alltoall(Tensors& outputs, Tensors& inputs, const c10d::AllToAllOptions& opts) override {
    verify(Fingerprint(Collective::all_to_all, -1));
    return out_of_place(OpType::ALLTOALL, outputs, inputs, [&](auto& o, auto& i) { return gloo_->alltoall(o, i, opts); });
  }

  c10::intrusive_ptr<Work> send(Tensors& tensors, int dst, int tag) override {
    Staging s;
    Tensors h = s.inputs(tensors);
    return run(OpType::SEND, std::move(s), tensors, [&] { return gloo_->send(h, dst, tag); });
  }

  c10::intrusive_ptr<Work> recv(Tensors& tensors, int src, int tag) override {
    Staging s;
    Tensors h = s.outputs(tensors);
    return run(OpType::RECV, std::move(s), tensors, [&] { return gloo_->recv(h, src, tag); });
  }

  c10::intrusive_ptr<Work> recvAnysource(Tensors& tensors, int tag) override {
    Staging s;
    Tensors h = s.outputs(tensors);
    return run(OpType::RECVANYSOURCE, std::move(s), tensors, [&] { return gloo_->recvAnysource(h, tag); });
  }

  c10::intrusive_ptr<Work> barrier(const c10d::BarrierOptions& opts) override {
    // barrier() names the accelerator as its device; Gloo's barrier moves no tensor.
    c10d::BarrierOptions o = opts;
    o.device = std::nullopt;
    return gloo_->barrier(o);
  }

  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override {
    gloo_->monitoredBarrier(opts, wait_all_ranks);
  }

 private:
  static Tensors flat(const at::Tensor& t) { return {t}; }
  static Tensors flat(const Tensors& ts) { return ts; }
  static Tensors flat(const std::vector<Tensors>& tss) {
    Tensors r;
    for (const auto& ts : tss) r.insert(r.end(), ts.begin(), ts.end());
    return r;
  }

  void verify(const Fingerprint& f) {
    if (check_) f.verify(*check_);
  }

  // The collectives that work in place (all_reduce and its coalesced form, reduce).
  template <class Issue>
  c10::intrusive_ptr<Work> in_place(OpType type, Tensors& tensors, Issue&& issue) {
    Staging s;
    Tensors h = s.inouts(tensors);
    return run(type, std::move(s), tensors, [&] { return issue(h); });
  }

  // The collectives that read `inputs` and write `outputs` (a tensor, a list,
  // or a list of lists each): host copies of the inputs, host buffers for the
  // outputs, the outputs copied back.
  template <class Out, class In, class Issue>
  c10::intrusive_ptr<Work> out_of_place(OpType type, Out& outputs, In& inputs, Issue&& issue) {
    Staging s;
    auto hin = s.in(inputs);
    auto hout = s.out(outputs);
    return run(type, std::move(s), flat(outputs), [&] { return issue(hout, hin); });
  }

  template <class Issue>
  c10::intrusive_ptr<Work> run(OpType type, Staging staging, Tensors outputs, Issue&& issue) {
    if (!staging.staged()) return issue();  // CPU tensors only: Gloo's own work
    staging.wait_for_inputs();
    c10::intrusive_ptr<Work> inner = issue();
    auto w = c10::make_intrusive<DeviceWork>(getRank(), type, std::move(inner), std::move(staging), std::move(outputs));
    completer_.push(w);
    return w;
  }

  c10::intrusive_ptr<c10d::Backend> gloo_;
  c10::intrusive_ptr<c10d::Backend> check_;
  Completer completer_;
};

}  // namespace

void bind_distributed(pybind11::module_& m) {
  m.def(
      "_dist_backend",
      [](c10::intrusive_ptr<c10d::Backend> gloo, const pybind11::object& check, int rank,
         int size) -> c10::intrusive_ptr<c10d::Backend> {
        c10::intrusive_ptr<c10d::Backend> c;
        if (!check.is_none()) c = check.cast<c10::intrusive_ptr<c10d::Backend>>();
        return c10::make_intrusive<DeviceBackend>(std::move(gloo), std::move(c), rank, size);
      },
      pybind11::arg("gloo"), pybind11::arg("check"), pybind11::arg("rank"), pybind11::arg("size"),
      "The device's c10d backend over a ProcessGroupGloo of the same group (Note [Collective staging]); "
      "`check`, a second ProcessGroupGloo of the same ranks or None, exchanges the collectives' fingerprints "
      "(Note [Collective fingerprints]).");
}

}  // namespace opgen_ref::runtime
