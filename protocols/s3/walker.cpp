#include "protocols/s3/walker.hpp"

#include <algorithm>
#include <deque>

namespace weft::s3 {

namespace asio = boost::asio;
using ns::Errc;
using Status = boost::system::result<void, Error>;

namespace {

constexpr std::size_t kPage = 1000;

// A name that vanished or stopped being a directory while we walked is
// simply not there; anything else is an error of the listing.
bool absent(const std::error_code& ec) {
  return ec == ns::make_error_code(Errc::not_found) || ec == ns::make_error_code(Errc::not_dir) ||
         ec == ns::make_error_code(Errc::stale);
}

// name < dir + "/", without building the string.
bool sorts_before_dir(std::string_view name, std::string_view dir) {
  std::size_t n = std::min(name.size(), dir.size());
  int c = name.substr(0, n).compare(dir.substr(0, n));
  if (c != 0) return c < 0;
  if (name.size() <= dir.size()) return true;  // a prefix of dir + "/"
  return static_cast<unsigned char>(name[dir.size()]) < '/';
}

bool dir_order(const ns::DirEntry& a, const ns::DirEntry& b) {
  return sorts_before_dir(a.name + "/", b.name);
}

}  // namespace

struct KeyWalker::Frame {
  ns::Ino ino = 0;
  ns::Attr attr;
  std::string path;    // the key prefix of this directory: "" or "a/b/"
  std::string filter;  // names must start with this (the walk's first level only)
  std::string cursor;  // list() resumes after this name
  std::deque<ns::DirEntry> page;
  bool eof = false;
  std::vector<ns::DirEntry> pending;  // directories listed, not yet reached; in key order
  bool seen_any = false;
  bool marker_allowed = false;

  void add_pending(ns::DirEntry e) {
    auto at = std::upper_bound(pending.begin(), pending.end(), e, dir_order);
    pending.insert(at, std::move(e));
  }
};

KeyWalker::KeyWalker(ns::Namespace& ns, const ns::OpContext& ctx, ns::Ino bucket,
                     std::string prefix, std::string after)
    : ns_(ns), ctx_(ctx), bucket_(bucket), prefix_(std::move(prefix)), after_(std::move(after)) {}

KeyWalker::~KeyWalker() = default;

void KeyWalker::enter() { enter_ = true; }

asio::awaitable<Status> KeyWalker::start() {
  std::size_t slash = prefix_.rfind('/');
  std::string dir_part = slash == std::string::npos ? std::string() : prefix_.substr(0, slash + 1);
  auto attr = co_await ns_.getattr(ctx_, bucket_);
  if (!attr) co_return from_ns(attr.error(), Subject::bucket);
  std::string_view rest = dir_part;
  while (!rest.empty()) {
    std::size_t s = rest.find('/');
    std::string_view part = rest.substr(0, s);
    rest.remove_prefix(s + 1);
    if (part.empty()) co_return Status();  // "a//b": no key maps to it
    auto d = co_await ns_.lookup(ctx_, attr->ino, part);
    if (!d) {
      if (absent(d.error())) co_return Status();
      co_return from_ns(d.error(), Subject::key);
    }
    if (d->type != ns::FileType::directory) co_return Status();
    attr = d;
  }
  auto root = std::make_unique<Frame>();
  root->ino = attr->ino;
  root->attr = *attr;
  root->path = dir_part;
  root->filter = prefix_.substr(dir_part.size());
  root->marker_allowed = !dir_part.empty() && root->filter.empty() && dir_part > after_;
  if (after_ < dir_part) {
    stack_.push_back(std::move(root));
    co_return co_await seed(0, {});
  }
  if (!after_.starts_with(dir_part)) co_return Status();  // everything here sorts before `after`
  stack_.push_back(std::move(root));
  co_return co_await seed(0, after_.substr(dir_part.size()));
}

// Prepares a level so that it yields exactly its keys after `bound` (relative
// to the level's path): the names that may still hold such keys are the
// ones from the bound's first component on, plus directories named by a
// prefix of that component followed by a byte below '/' ("a" for "a.b":
// "a/..." sorts after "a.b"), plus, when the bound goes deeper, the part of
// the component's own directory after the rest of the bound.
asio::awaitable<Status> KeyWalker::seed(std::size_t index, const std::string& bound) {
  Frame& f = *stack_[index];
  const std::string filter = f.filter;
  auto probe = [&](const std::string& name) -> asio::awaitable<boost::system::result<std::optional<ns::DirEntry>, Error>> {
    auto e = co_await ns_.lookup(ctx_, f.ino, name);
    if (!e) {
      if (absent(e.error())) co_return std::optional<ns::DirEntry>();
      co_return from_ns(e.error(), Subject::key);
    }
    f.seen_any = true;
    co_return std::optional<ns::DirEntry>(ns::DirEntry{name, e->ino, e->type, 0, *e});
  };
  if (bound.empty() || bound < filter) {
    if (!filter.empty()) {
      auto e = co_await probe(filter);
      if (!e) co_return e.error();
      if (*e) f.page.push_back(std::move(**e));
      f.cursor = filter;
    }
    co_return Status();
  }
  std::size_t slash = bound.find('/');
  std::string c = bound.substr(0, slash);
  for (std::size_t len = 1; len < c.size(); ++len) {
    if (static_cast<unsigned char>(c[len]) >= '/' || len < filter.size() || !c.starts_with(filter))
      continue;
    auto e = co_await probe(c.substr(0, len));
    if (!e) co_return e.error();
    if (*e && (*e)->type == ns::FileType::directory) f.add_pending(std::move(**e));
  }
  f.cursor = c;
  if (!c.starts_with(filter)) co_return Status();
  auto e = co_await probe(c);
  if (!e) co_return e.error();
  if (!*e || (*e)->type != ns::FileType::directory) co_return Status();  // a file "c" sorts <= bound
  if (slash == std::string::npos) {
    f.add_pending(std::move(**e));  // all of "c/..." sorts after "c"
    co_return Status();
  }
  auto child = std::make_unique<Frame>();
  child->ino = (*e)->ino;
  child->attr = *(*e)->attr;
  child->path = f.path + c + "/";
  stack_.push_back(std::move(child));
  co_return co_await seed(stack_.size() - 1, bound.substr(slash + 1));
}

asio::awaitable<Status> KeyWalker::fill(Frame& f) {
  if (!f.page.empty() || f.eof) co_return Status();
  auto page = co_await ns_.list(ctx_, f.ino, f.cursor, kPage, true);
  if (!page) {
    if (absent(page.error())) {
      f.eof = true;
      co_return Status();
    }
    co_return from_ns(page.error(), Subject::key);
  }
  f.eof = page->eof;
  if (!page->entries.empty()) {
    f.seen_any = true;
    f.cursor = page->entries.back().name;
  }
  for (auto& e : page->entries) {
    if (!e.name.starts_with(f.filter)) {
      // Names with the filter as prefix are contiguous: past them, stop.
      if (e.name > f.filter) {
        f.eof = true;
        break;
      }
      continue;
    }
    f.page.push_back(std::move(e));
  }
  co_return Status();
}

asio::awaitable<boost::system::result<std::optional<WalkItem>, Error>> KeyWalker::next() {
  if (!started_) {
    started_ = true;
    if (auto s = co_await start(); !s) co_return s.error();
  }
  if (enter_) {
    enter_ = false;
    const WalkItem& d = *last_dir_;
    auto frame = std::make_unique<Frame>();
    frame->ino = d.attr.ino;
    frame->attr = d.attr;
    frame->path = d.key;
    frame->marker_allowed = d.key > after_;
    stack_.push_back(std::move(frame));
    if (after_.starts_with(d.key))
      if (auto s = co_await seed(stack_.size() - 1, after_.substr(d.key.size())); !s) co_return s.error();
  }
  while (!stack_.empty()) {
    Frame& f = *stack_.back();
    if (auto s = co_await fill(f); !s) co_return s.error();
    if (f.page.empty() && f.pending.empty()) {
      bool marker = !f.seen_any && f.marker_allowed;
      WalkItem item{WalkItem::Kind::marker, f.path, f.attr};
      stack_.pop_back();
      if (marker) co_return std::optional<WalkItem>(std::move(item));
      continue;
    }
    bool from_page = !f.page.empty() &&
                     (f.pending.empty() || sorts_before_dir(f.page.front().name, f.pending.front().name));
    if (from_page) {
      ns::DirEntry e = std::move(f.page.front());
      f.page.pop_front();
      if (e.type == ns::FileType::directory) {
        f.add_pending(std::move(e));
        continue;
      }
      if (e.type != ns::FileType::regular || !e.attr) continue;  // symlinks are not objects
      std::string key = f.path + e.name;
      if (key <= after_) continue;
      co_return std::optional<WalkItem>(WalkItem{WalkItem::Kind::object, std::move(key), *e.attr});
    }
    ns::DirEntry d = std::move(f.pending.front());
    f.pending.erase(f.pending.begin());
    std::string key = f.path + d.name + "/";
    if (key < after_ && !after_.starts_with(key)) continue;
    if (!d.attr) continue;
    last_dir_ = WalkItem{WalkItem::Kind::directory, std::move(key), *d.attr};
    co_return last_dir_;
  }
  co_return std::optional<WalkItem>();
}

}  // namespace weft::s3
