#include "backends/cpu/worker_pool.hpp"

#include <algorithm>

namespace metalcall::cpu {

WorkerPool& WorkerPool::instance() {
  // Never destroyed: threads must not be joined during interpreter shutdown.
  static WorkerPool* pool = new WorkerPool(std::max(1u, std::thread::hardware_concurrency()));
  return *pool;
}

WorkerPool::WorkerPool(unsigned participants) {
  for (unsigned i = 1; i < participants; ++i) threads_.emplace_back([this, i] { worker_loop(i); });
  for (auto& t : threads_) t.detach();
}

void WorkerPool::work_on(Job& job, unsigned worker) {
  for (;;) {
    const std::uint64_t begin = job.next.fetch_add(job.chunk, std::memory_order_relaxed);
    if (begin >= job.count) return;
    job.fn(job.ctx, begin, std::min(job.count, begin + job.chunk), worker);
  }
}

void WorkerPool::worker_loop(unsigned index) {
  std::uint64_t seen = 0;
  for (;;) {
    Job* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait(lock, [&] { return job_ != nullptr && generation_ != seen; });
      seen = generation_;
      job = job_;
      ++busy_;
    }
    work_on(*job, index);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
    }
    done_cv_.notify_all();
  }
}

void WorkerPool::parallel_for(std::uint64_t count, std::uint64_t chunk, RangeFn fn, void* ctx) {
  if (count == 0) return;
  chunk = std::max<std::uint64_t>(1, chunk);
  std::lock_guard<std::mutex> serial(job_mutex_);
  if (threads_.empty() || count <= chunk) {
    fn(ctx, 0, count, 0);  // one chunk: waking workers would only add latency
    return;
  }
  Job job;
  job.fn = fn;
  job.ctx = ctx;
  job.count = count;
  job.chunk = chunk;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &job;
    ++generation_;
  }
  work_cv_.notify_all();
  work_on(job, 0);
  std::unique_lock<std::mutex> lock(mutex_);
  job_ = nullptr;
  done_cv_.wait(lock, [&] { return busy_ == 0; });
}

}  // namespace metalcall::cpu
