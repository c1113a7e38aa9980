// Threads and row loads for the CPU kernel library (Common.h); its errors are
// common/Errors.h's.
#include "kernels/cpu/Common.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace refk {
namespace {

// A fork-join pool: parallel_for hands out chunk indices through an atomic
// counter to the caller and up to threads-1 persistent workers. One job runs
// at a time; a parallel_for that finds the pool busy (another host thread, or
// a nested call) runs its range inline, so nothing can deadlock.
class Pool {
 public:
  bool try_run(int64_t n, int64_t chunk, int threads, const std::function<void(int64_t, int64_t)>& f) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    grow(threads - 1);
    {
      std::lock_guard<std::mutex> g(mu_);
      job_ = &f;
      n_ = n;
      chunk_ = chunk;
      chunks_ = (n + chunk - 1) / chunk;
      next_.store(0);
      done_.store(0);
      active_ = std::min<int>(threads - 1, static_cast<int>(chunks_) - 1);
      ++generation_;
    }
    cv_.notify_all();
    work();
    std::unique_lock<std::mutex> g(mu_);
    finished_.wait(g, [&] { return done_.load() == chunks_ && running_ == 0; });
    job_ = nullptr;
    return true;
  }

 private:
  void work() {
    for (int64_t c = next_.fetch_add(1); c < chunks_; c = next_.fetch_add(1)) {
      const int64_t begin = c * chunk_;
      (*job_)(begin, std::min(n_, begin + chunk_));
      if (done_.fetch_add(1) + 1 == chunks_) {
        std::lock_guard<std::mutex> g(mu_);
        finished_.notify_all();
      }
    }
  }

  void grow(int want) {
    while (static_cast<int>(workers_.size()) < want) {
      const int id = static_cast<int>(workers_.size());
      workers_.emplace_back([this, id] { loop(id); });
      workers_.back().detach();
    }
  }

  void loop(int id) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> g(mu_);
        cv_.wait(g, [&] { return generation_ != seen; });
        seen = generation_;
        if (id >= active_) continue;
        ++running_;
      }
      // The caller holds its operands' access windows; this thread takes
      // them for its chunks (Note [Protected device memory]).
      refAccessThreadBegin();
      work();
      refAccessThreadEnd();
      std::lock_guard<std::mutex> g(mu_);
      --running_;
      finished_.notify_all();
    }
  }

  std::mutex busy_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable finished_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int64_t)>* job_ = nullptr;
  int64_t n_ = 0, chunk_ = 1, chunks_ = 0;
  std::atomic<int64_t> next_{0}, done_{0};
  int active_ = 0, running_ = 0;
  uint64_t generation_ = 0;
};

Pool& pool() {
  static Pool* p = new Pool();  // workers outlive static destruction
  return *p;
}

}  // namespace

refkStatus guarded(const char* op, const std::function<refkStatus()>& body) {
  try {
    return body();
  } catch (const std::exception& e) {
    return fail(refkErrorInvalidValue, std::string(op) + ": " + e.what());
  }
}

void parallel_for(int64_t n, int64_t grain, int threads, const std::function<void(int64_t, int64_t)>& f) {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  const int use = static_cast<int>(std::min<int64_t>(std::max(threads, 1), max_chunks));
  if (use <= 1) {
    f(0, n);
    return;
  }
  // A few chunks per thread balance uneven rows without much overhead.
  const int64_t chunks = std::min<int64_t>(max_chunks, int64_t{use} * 4);
  const int64_t chunk = (n + chunks - 1) / chunks;
  if (!pool().try_run(n, chunk, use, f)) f(0, n);
}

double load_any(const refkTensor& t, int64_t i) {
  return dispatch(t.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return static_cast<double>(load(static_cast<const T*>(t.data)[i]));
  });
}

void store_any(const refkTensor& t, int64_t i, double v) {
  dispatch(t.dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    static_cast<T*>(t.data)[i] = store<T>(v);
    return 0;
  });
}

}  // namespace refk

extern "C" const char* refkLastError(void) { return refk::last_error().c_str(); }
