// Runs a blocking function on a thread pool and resumes the awaiting
// coroutine on its own executor: fsync and synchronous metadata commits must
// never stall the threads that run the network front ends.
#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <type_traits>
#include <utility>

namespace weft::ns {

// Runs `fn` on `ex` (a pool's executor, or a strand of one, which runs
// what it is given in the order given).
template <class Executor, class F>
auto offload_on(Executor ex, F fn) -> boost::asio::awaitable<std::invoke_result_t<F&>> {
  using R = std::invoke_result_t<F&>;
  return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(R)>(
      [ex](auto handler, F f) {
        auto work = boost::asio::make_work_guard(boost::asio::get_associated_executor(handler));
        boost::asio::post(ex, [handler = std::move(handler), f = std::move(f),
                               work = std::move(work)]() mutable {
          R result = f();
          auto home = work.get_executor();
          boost::asio::dispatch(home, [handler = std::move(handler),
                                       result = std::move(result)]() mutable {
            std::move(handler)(std::move(result));
          });
        });
      },
      boost::asio::use_awaitable, std::move(fn));
}

template <class F>
auto offload(boost::asio::thread_pool& pool, F fn) -> boost::asio::awaitable<std::invoke_result_t<F&>> {
  return offload_on(pool.get_executor(), std::move(fn));
}

}  // namespace weft::ns
