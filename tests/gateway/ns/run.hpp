// Drives namespace coroutines from synchronous test code. Each test owns one
// io_context; run() spawns a coroutine on it, runs the context until that
// coroutine has finished and hands back its value (or rethrows what it threw).
// run_parallel() does the same for several coroutines on several threads.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace weft::ns::test {

namespace asio = boost::asio;

template <class T>
T run(asio::io_context& io, asio::awaitable<T> task) {
  // The namespace resumes its callers by posting to their executor from its
  // own threads; while a coroutine waits for that, the context may have no
  // work of its own, so a guard keeps run() from returning early.
  auto guard = asio::make_work_guard(io);
  std::exception_ptr error;
  std::optional<std::conditional_t<std::is_void_v<T>, bool, T>> value;
  if constexpr (std::is_void_v<T>) {
    asio::co_spawn(io, std::move(task), [&](std::exception_ptr e) {
      error = e;
      value.emplace(true);
      guard.reset();
    });
  } else {
    asio::co_spawn(io, std::move(task), [&](std::exception_ptr e, T v) {
      error = e;
      if (!e) value.emplace(std::move(v));
      guard.reset();
    });
  }
  io.restart();
  io.run();
  if (error) std::rethrow_exception(error);
  if constexpr (!std::is_void_v<T>) return std::move(*value);
}

// Runs all `tasks` to completion on `threads` threads calling io.run().
inline void run_parallel(asio::io_context& io, std::vector<asio::awaitable<void>> tasks,
                         std::size_t threads) {
  auto guard = asio::make_work_guard(io);
  std::mutex mutex;
  std::exception_ptr first_error;
  std::atomic<std::size_t> pending{tasks.size()};
  if (tasks.empty()) guard.reset();
  for (auto& task : tasks) {
    asio::co_spawn(io, std::move(task), [&](std::exception_ptr e) {
      if (e) {
        std::lock_guard lock(mutex);
        if (!first_error) first_error = e;
      }
      if (pending.fetch_sub(1) == 1) guard.reset();
    });
  }
  io.restart();
  std::vector<std::thread> pool;
  for (std::size_t i = 1; i < threads; ++i) pool.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace weft::ns::test
