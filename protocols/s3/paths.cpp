#include "protocols/s3/paths.hpp"

#include <vector>

namespace weft::s3 {

namespace asio = boost::asio;
using ns::Errc;

namespace {
bool is(const std::error_code& ec, Errc e) { return ec == ns::make_error_code(e); }
}  // namespace

asio::awaitable<Found<ns::Attr>> find_bucket(ns::Namespace& ns, const ns::OpContext& ctx,
                                             std::string_view bucket) {
  auto a = co_await ns.lookup(ctx, ctx.export_access.root, bucket);
  if (!a) co_return from_ns(a.error(), Subject::bucket);
  if (a->type != ns::FileType::directory) co_return Error(Code::NoSuchBucket);
  co_return *a;
}

asio::awaitable<Found<ns::Attr>> find_object(ns::Namespace& ns, const ns::OpContext& ctx,
                                             ns::Ino bucket, const KeyPath& key) {
  ns::Ino dir = bucket;
  ns::Attr a;
  for (std::string_view part : key.dirs) {
    auto d = co_await ns.lookup(ctx, dir, part);
    if (!d) co_return is(d.error(), Errc::not_dir) ? Error(Code::NoSuchKey) : from_ns(d.error(), Subject::key);
    if (d->type != ns::FileType::directory) co_return Error(Code::NoSuchKey);
    dir = d->ino;
    a = *d;
  }
  if (key.marker()) co_return a;
  auto f = co_await ns.lookup(ctx, dir, key.leaf);
  if (!f) co_return is(f.error(), Errc::not_dir) ? Error(Code::NoSuchKey) : from_ns(f.error(), Subject::key);
  if (f->type != ns::FileType::regular) co_return Error(Code::NoSuchKey);
  co_return *f;
}

asio::awaitable<Found<ns::Attr>> key_dir(ns::Namespace& ns, const ns::OpContext& ctx,
                                         ns::Ino bucket, const KeyPath& key, bool create) {
  auto cur = co_await ns.getattr(ctx, bucket);
  if (!cur) co_return from_ns(cur.error(), Subject::bucket);
  for (std::string_view part : key.dirs) {
    auto d = co_await ns.lookup(ctx, cur->ino, part);
    if (!d && create && is(d.error(), Errc::not_found)) {
      d = co_await ns.mkdir(ctx, cur->ino, part, 0755);
      // Another request made it first.
      if (!d && is(d.error(), Errc::exists)) d = co_await ns.lookup(ctx, cur->ino, part);
    }
    if (!d) co_return from_ns(d.error(), Subject::key);
    if (d->type != ns::FileType::directory) co_return from_ns(ns::make_error_code(Errc::not_dir), Subject::key);
    cur = d;
  }
  co_return *cur;
}

asio::awaitable<void> prune_dirs(ns::Namespace& ns, const ns::OpContext& ctx, ns::Ino bucket,
                                 const KeyPath& key) {
  std::vector<ns::Ino> inos{bucket};
  for (std::string_view part : key.dirs) {
    auto d = co_await ns.lookup(ctx, inos.back(), part);
    if (!d || d->type != ns::FileType::directory) break;
    inos.push_back(d->ino);
  }
  // inos[i] is the parent of key.dirs[i].
  for (std::size_t i = inos.size() - 1; i-- > 0;) {
    auto r = co_await ns.rmdir(ctx, inos[i], key.dirs[i]);
    if (!r) break;
  }
}

}  // namespace weft::s3
