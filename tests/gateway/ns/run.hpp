// Drives namespace coroutines from synchronous test code. Each test owns one
// io_context; run() spawns a coroutine on it, runs the context until that
// coroutine has finished and hands back its value (or rethrows what it threw).
// run_parallel() does the same for several coroutines on several threads.
//
// Both give up after a time limit and throw, so that a call that never
// completes fails its test instead of hanging the whole suite.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft::ns::test {

namespace asio = boost::asio;
using namespace std::chrono_literals;

template <class T>
T run(asio::io_context& io, asio::awaitable<T> task, std::chrono::seconds limit = 90s) {
  // Shared with the completion handler, which may outlive this frame when
  // the call times out. The guard keeps io.run() going while the coroutine
  // waits for the namespace's own threads, which resume it by posting here.
  struct State {
    explicit State(asio::io_context& io) : guard(asio::make_work_guard(io)) {}
    asio::executor_work_guard<asio::io_context::executor_type> guard;
    std::exception_ptr error;
    std::optional<std::conditional_t<std::is_void_v<T>, bool, T>> value;
    bool done = false;
  };
  auto state = std::make_shared<State>(io);
  if constexpr (std::is_void_v<T>) {
    asio::co_spawn(io, std::move(task), [state](std::exception_ptr e) {
      state->error = e;
      state->value.emplace(true);
      state->done = true;
      state->guard.reset();
    });
  } else {
    asio::co_spawn(io, std::move(task), [state](std::exception_ptr e, T v) {
      state->error = e;
      if (!e) state->value.emplace(std::move(v));
      state->done = true;
      state->guard.reset();
    });
  }
  io.restart();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!state->done && std::chrono::steady_clock::now() < deadline)
    io.run_one_until(deadline);
  if (!state->done)
    throw std::runtime_error("a namespace call did not complete within " +
                             std::to_string(limit.count()) + " s");
  if (state->error) std::rethrow_exception(state->error);
  if constexpr (!std::is_void_v<T>) return std::move(*state->value);
}

// Runs all `tasks` to completion on `threads` threads calling io.run().
inline void run_parallel(asio::io_context& io, std::vector<asio::awaitable<void>> tasks,
                         std::size_t threads, std::chrono::seconds limit = 120s) {
  struct State {
    explicit State(asio::io_context& io, std::size_t n)
        : guard(asio::make_work_guard(io)), pending(n) {}
    asio::executor_work_guard<asio::io_context::executor_type> guard;
    std::mutex mutex;
    std::exception_ptr first_error;
    std::atomic<std::size_t> pending;
  };
  auto state = std::make_shared<State>(io, tasks.size());
  if (tasks.empty()) state->guard.reset();
  for (auto& task : tasks) {
    asio::co_spawn(io, std::move(task), [state](std::exception_ptr e) {
      if (e) {
        std::lock_guard lock(state->mutex);
        if (!state->first_error) state->first_error = e;
      }
      if (state->pending.fetch_sub(1) == 1) state->guard.reset();
    });
  }
  io.restart();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  const auto serve = [&io, &state, deadline] {
    while (state->pending.load() > 0 && std::chrono::steady_clock::now() < deadline)
      io.run_one_until(deadline);
  };
  std::vector<std::thread> pool;
  for (std::size_t i = 1; i < threads; ++i) pool.emplace_back(serve);
  serve();
  for (auto& t : pool) t.join();
  if (state->pending.load() > 0)
    throw std::runtime_error(std::to_string(state->pending.load()) +
                             " concurrent tasks did not complete within " +
                             std::to_string(limit.count()) + " s");
  if (state->first_error) std::rethrow_exception(state->first_error);
}

}  // namespace weft::ns::test
