// Blocking client libraries (libnfs's sync API, libsmbclient) behind
// coroutines. A SessionRunner runs jobs with a connected session (a
// connection, a library context) on a thread of its own, so a slow call
// never blocks a network thread, and delivers their results on the
// caller's executor. SessionPool is the usual runner: a few threads, each
// with its own session that only that thread touches, so a library whose
// contexts are not thread-safe is safe there.
//
// Contract:
//  - A session is made on its thread's first job, and dropped after a job
//    that failed with Errc::unavailable or Errc::timed_out (the connection
//    is suspect), so that the next job on that thread reconnects.
//  - SessionPool's destructor finishes the job each thread is running,
//    fails the queued ones with Errc::unavailable, and joins the threads.
#pragma once

#include "backend/connectors/source.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace weft::connectors {

template <class Session>
class SessionRunner {
 public:
  virtual ~SessionRunner() = default;
  // Runs job(session) off the caller's thread. The job returns true when
  // its session must be dropped. Fails, without running the job, when no
  // session can be made.
  virtual boost::asio::awaitable<Status> run(std::function<bool(Session&)> job) = 0;
};

// Whether an error leaves a session's connection suspect.
inline bool suspect(Errc code) { return code == Errc::unavailable || code == Errc::timed_out; }

// The session in `slot`, made by `connect` if there is none yet.
template <class Session, class Connect>
Result<Session*> session_in(std::unique_ptr<Session>& slot, const Connect& connect) {
  if (!slot) {
    auto made = connect();
    if (!made) return made.error();
    slot = std::move(*made);
  }
  return slot.get();
}

// A job with a result of its own on a runner.
template <class T, class Session>
boost::asio::awaitable<Result<T>> run_job(SessionRunner<Session>& runner, std::function<Result<T>(Session&)> job) {
  // Written on the runner's thread before the completion is posted back,
  // read here after it: the post orders the two.
  std::optional<Result<T>> out;
  std::function<bool(Session&)> erased = [&out, &job](Session& s) {
    out.emplace(job(s));
    return !out->has_value() && suspect(out->error().code);
  };
  auto op_run = runner.run(std::move(erased));
  auto status = co_await std::move(op_run);
  if (!status) co_return status.error();
  co_return std::move(*out);
}

template <class Session>
class SessionPool final : public SessionRunner<Session> {
 public:
  using Connect = std::function<Result<std::unique_ptr<Session>>()>;

  SessionPool(std::size_t threads, Connect connect) : connect_(std::move(connect)) {
    for (std::size_t i = 0; i < std::max<std::size_t>(threads, 1); ++i) threads_.emplace_back([this] { work(); });
  }
  ~SessionPool() override {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  boost::asio::awaitable<Status> run(std::function<bool(Session&)> job) override {
    namespace asio = boost::asio;
    auto initiate = [this](auto handler, std::function<bool(Session&)> job) {
      // Held by a shared_ptr: the queue's std::function must be copyable,
      // the coroutine's handler is move-only.
      using Handler = decltype(handler);
      struct Pending {
        Handler handler;
        asio::executor_work_guard<asio::associated_executor_t<Handler>> work;
        std::function<bool(Session&)> job;
      };
      auto executor = asio::get_associated_executor(handler);
      auto pending = std::make_shared<Pending>(std::move(handler), asio::make_work_guard(executor), std::move(job));
      enqueue([this, pending](std::unique_ptr<Session>* slot) {
        Status status = failure(Errc::unavailable, "the connector is closing");
        if (slot) {
          auto session = session_in(*slot, connect_);
          if (!session) {
            status = session.error();
          } else {
            status = Status();
            if (pending->job(**session)) slot->reset();
          }
        }
        // Nothing of the caller's stays here once the completion is posted:
        // the caller may finish, and its io_context go, before this thread
        // leaves the job. The work guard goes with the completion.
        pending->job = nullptr;
        auto ex = pending->work.get_executor();
        asio::post(ex, [handler = std::move(pending->handler), work = std::move(pending->work),
                        status = std::move(status)]() mutable { std::move(handler)(std::move(status)); });
      });
    };
    return asio::async_initiate<decltype(asio::use_awaitable), void(Status)>(initiate, asio::use_awaitable,
                                                                             std::move(job));
  }

  // Runs job(session) on a thread unless the pool is closing (or no
  // session can be made); nobody waits for it.
  void post(std::function<void(Session&)> job) {
    enqueue([this, job = std::move(job)](std::unique_ptr<Session>* slot) {
      if (!slot) return;
      if (auto session = session_in(*slot, connect_)) job(**session);
    });
  }

 private:
  // A queued job; given its thread's session slot, or null when the pool
  // is closing.
  using Job = std::function<void(std::unique_ptr<Session>*)>;

  void enqueue(Job job) {
    {
      std::lock_guard lock(mu_);
      if (!stopping_) {
        queue_.push_back(std::move(job));
        job = nullptr;
      }
    }
    if (job) {
      job(nullptr);
      return;
    }
    ready_.notify_one();
  }

  void work() {
    std::unique_ptr<Session> session;  // this thread's alone
    for (;;) {
      Job job;
      bool closing = false;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
        closing = stopping_;
      }
      job(closing ? nullptr : &session);
    }
  }

  Connect connect_;
  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<Job> queue_;  // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace weft::connectors
