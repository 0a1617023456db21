// Spoke mounts: the learning prefetcher (see spoke.hpp, backend/hub/SPOKES.md
// "Prefetching" and cache/learn/README.md "Online"). Each mount has one
// cache/learn Ensemble over a catalog of the hub files its readers touched
// (their directories' listings, so that a dataset is whole). Every read is
// observed; the ensemble then plans what its reader reads next, and the
// proposals are fetched best first, in batches through the hub client like
// the listing-order readahead, while the bytes on their way stay within the
// link's window and a share of the chunk cache. A fetch that completes
// plans again, so a declared order (Spokes::hint) keeps the link busy
// between reads.
#include "gateway/ns/spoke_internal.hpp"

#include "gateway/ns/index_file.hpp"

#include "cache/learn/ensemble.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <set>
#include <unordered_set>

namespace weft::ns {

using namespace spoke_detail;
namespace learn = cache::learn;

namespace {

// Bytes of the files of one fetch request, about: an eighth of the budget
// (so that several requests share the link's connections), within these.
constexpr std::uint64_t kMinRequestBytes = 1ull << 20;
constexpr std::uint64_t kMaxRequestBytes = 8ull << 20;
// The share of the chunk cache's RAM tier that may be on its way at once:
// what is fetched ahead must still be there when it is read.
constexpr std::uint64_t kCacheShare = 4;
// Requests of a mount's plans on the wire at once; the rest of the window
// waits its turn, in the plans' order. Requests on one link share it, so
// all of a window sent at once arrives at once, its first files (the next
// batch a job needs) as late as its last. From a standstill two go out,
// one more as each comes in, up to the whole window's eight (what keeps
// a fast reader's link busy while each request waits its round trip and
// the hub's compression): the first files first, then the link's rate.
constexpr unsigned kMinFetchesOnWire = 2;
constexpr unsigned kMaxFetchesOnWire = 8;
// Plans of one read ask the ensemble this many times at most (it proposes
// a few files per expert at a time) to fill the window.
constexpr int kPlanRounds = 64;

// A range of a file fetched ahead, counted in flight until it is in.
struct Charged {
  learn::FileId file = 0;
  std::uint64_t from = 0, to = 0;
};

// A request of a plan: chunks of files (charged to the budget), or only
// the manifests of files proposed beyond it.
struct Fetch {
  std::string dir;
  std::vector<AheadFile> files;
  std::vector<Charged> charged;
  bool manifests_only = false;
};

}  // namespace

namespace spoke_detail {

struct Learner {
  std::mutex mu;
  const std::chrono::steady_clock::time_point origin = std::chrono::steady_clock::now();
  // How to fetch each file of the catalog, by its id.
  struct File {
    std::string dir, name;  // hub directory and name
    std::uint64_t hub_ino = 0, version = 0;
  };
  std::vector<File> files;                               // guarded by mu
  learn::Catalog catalog = learn::Catalog::Builder{}.build();  // guarded by mu; rebuilt in place
  std::unordered_set<std::string> listed;                // guarded by mu: hub directories in the catalog
  learn::Ensemble ensemble{catalog};                     // guarded by mu
  std::unordered_map<std::string, learn::ClientId> clients;  // guarded by mu: by principal
  // Each client's last hint (directory hub path, hint): the same again changes nothing.
  std::unordered_map<learn::ClientId, std::pair<std::string, SpokeHint>> hints;  // guarded by mu
  std::unordered_map<learn::FileId, std::uint64_t> in_flight;  // guarded by mu: bytes on their way
  std::uint64_t in_flight_bytes = 0;                           // guarded by mu
  // Chunk requests planned and not sent yet, in order, each with the job
  // it was planned for; how many are on the wire, and may be
  // (kMinFetchesOnWire..kMaxFetchesOnWire).
  std::deque<std::pair<learn::ClientId, Fetch>> queued;  // guarded by mu
  unsigned on_wire = 0;                                  // guarded by mu
  unsigned wire_limit = kMinFetchesOnWire;               // guarded by mu
  std::vector<learn::Proposal> proposals;                      // guarded by mu: scratch
  // Files found wholly in the cache, and the cache's forgotten() then: they
  // still are while nothing has left it. The experts ask about the same
  // files at every read (warm reads included), so this spares checking
  // each of their chunks again.
  struct Resident {
    std::uint64_t hub_ino = 0, version = 0, forgotten = 0;
  };
  std::unordered_map<learn::FileId, Resident> resident;  // guarded by mu

  learn::Time now() const {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - origin).count();
  }
};

}  // namespace spoke_detail

namespace {

// A hub file to add to the catalog.
struct NewFile {
  std::string path;  // hub path
  std::uint64_t size = 0;
  Learner::File file;
};

// With l.mu held: the files join the catalog, which is rebuilt in place
// (the experts keep a reference to it). The builder numbers paths in the
// order they are added, so adding the old ones first keeps every id; a
// file seen again takes its newer version.
void add_files(Learner& l, std::vector<NewFile> more) {
  learn::Catalog::Builder b;
  for (learn::FileId f = 0; f < l.catalog.files(); ++f) b.add(l.catalog.path(f), l.catalog.size(f));
  for (auto& n : more) {
    const learn::FileId id = b.add(n.path, n.size);
    if (id == l.files.size())
      l.files.push_back(std::move(n.file));
    else
      l.files[id] = std::move(n.file);
  }
  l.catalog = std::move(b).build();
}

// A hub directory's regular files as catalog entries.
std::vector<NewFile> listing_files(const std::string& hub_dir,
                                   const std::vector<std::pair<std::string, wire::FileAttr>>& listing) {
  std::vector<NewFile> out;
  for (const auto& [name, a] : listing) {
    if (type_of(a.type) != FileType::regular) continue;
    out.push_back({join(hub_dir, name), a.size, {hub_dir, name, a.ino, a.version}});
  }
  return out;
}

// With l.mu held: the id of the caller's job (its principal).
learn::ClientId client_of(Learner& l, const OpContext& ctx) {
  const std::string who = ctx.principal.user.empty() ? "uid:" + std::to_string(ctx.principal.uid) : ctx.principal.user;
  return l.clients.try_emplace(who, static_cast<learn::ClientId>(l.clients.size())).first->second;
}

// What the ensemble asks while it plans: whether a file's range needs no
// fetching (on its way, or every chunk of it cached).
class MountResidency final : public learn::Residency {
 public:
  MountResidency(State& st, Mount& m, Learner& l) : st_(st), m_(m), l_(l) {}
  // `refresh` is what resident chunks of a trusted prediction should be
  // told; not passed on yet (the reads' chunks take chunk_outlook()).
  bool covered(learn::FileId file, std::uint64_t offset, std::uint64_t length, const learn::Outlook&) override {
    if (l_.in_flight.contains(file)) return true;
    const std::uint64_t end = length ? offset + length : l_.catalog.size(file);
    return first_gap(file, offset, end) >= end;
  }
  // Where the first chunk in [from, to) of a file that no tier holds
  // starts (`to`: none; `from` while its manifest is not known).
  std::uint64_t first_gap(learn::FileId file, std::uint64_t from, std::uint64_t to) {
    const Learner::File& f = l_.files[file];
    const std::uint64_t forgotten = st_.chunks->forgotten();  // before looking: a loss meanwhile shows next time
    if (auto it = l_.resident.find(file); it != l_.resident.end() && it->second.hub_ino == f.hub_ino &&
                                          it->second.version == f.version && it->second.forgotten == forgotten)
      return to;
    std::shared_ptr<const wire::Manifest> man;
    {
      std::lock_guard lock(m_.mu);
      auto it = m_.manifests.find({f.hub_ino, f.version});
      if (it == m_.manifests.end()) return from;
      man = it->second;
    }
    for (const auto& c : man->chunks) {
      if (c.offset + c.length <= from || c.offset >= to) continue;
      if (st_.chunks->holds(c.digest) == cache::ChunkCache::Held::no) return std::max(from, c.offset);
    }
    if (from == 0 && to >= man->size) l_.resident[file] = {f.hub_ino, f.version, forgotten};
    return to;
  }

 private:
  State& st_;
  Mount& m_;
  Learner& l_;
};

AheadFile ahead_file(const Learner& l, learn::FileId id, std::uint64_t from, std::uint64_t to) {
  const Learner::File& f = l.files[id];
  AheadFile a;
  a.name = f.name;
  a.hub_ino = f.hub_ino;
  a.version = f.version;
  a.size = l.catalog.size(id);
  a.whole = true;
  a.from = from;
  a.to = to;
  return a;
}

void launch(const std::shared_ptr<State>& st, const std::shared_ptr<Mount>& m, learn::ClientId client,
            std::vector<Fetch> fetches);

// With l.mu held: what `client` reads next, as fetch requests: proposals
// best first until the bytes on their way would pass the window, and, for
// all of them, one request per directory of the manifests not yet known
// (first: the chunk requests then wait for it rather than ask each). The
// ensemble proposes a few files per expert at a time, so it is asked
// again while the window has room: a declared order fills it at once.
std::vector<Fetch> plan(State& st, Mount& m, Learner& l, learn::ClientId client) {
  std::vector<Fetch> out;
  if (st.stopped || !st.cache_open.load(std::memory_order_acquire)) return out;
  {
    std::lock_guard lock(m.mu);
    if (m.stopped) return out;
  }
  MountResidency residency(st, m, l);
  const std::uint64_t budget = std::min(link_window(m), st.chunks->stats().ram_budget / kCacheShare);
  const std::uint64_t request_bytes = std::clamp(budget / 8, kMinRequestBytes, kMaxRequestBytes);
  std::vector<Fetch> manifests;
  std::unordered_set<learn::FileId> manifest_listed;  // experts may propose the same file
  // From a standstill (nothing on its way: a job starts) the first requests
  // are small and grow to request_bytes, doubling: the few on the wire share
  // the link, and the first, the files the job reads first, arrives sooner.
  std::uint64_t group_limit = l.in_flight_bytes == 0 ? kMinRequestBytes : request_bytes;
  std::uint64_t group_bytes = 0;
  bool room = true, took = true;
  for (int round = 0; round < kPlanRounds && room && took; ++round) {
    l.proposals.clear();
    l.ensemble.plan(client, l.now(), residency, l.proposals);
    took = false;
    for (const learn::Proposal& p : l.proposals) {
      const learn::FileId id = p.prediction.file;
      if (l.files[id].version == 0 || l.in_flight.contains(id) || !manifest_listed.insert(id).second) continue;
      if (manifests.empty() || manifests.back().dir != l.files[id].dir)
        manifests.push_back({l.files[id].dir, {}, {}, true});
      manifests.back().files.push_back(ahead_file(l, id, 0, 0));
    }
    for (const learn::Proposal& p : l.proposals) {
      const learn::FileId id = p.prediction.file;
      if (l.in_flight.contains(id)) continue;  // another expert's proposal of it was taken
      const Learner::File& f = l.files[id];
      const std::uint64_t size = l.catalog.size(id);
      std::uint64_t to = p.prediction.length ? std::min(size, p.prediction.offset + p.prediction.length) : size;
      if (f.version == 0 || p.prediction.offset >= to) continue;
      // From what is missing, a part of a large file at a time: its next
      // part is proposed again.
      const std::uint64_t from = residency.first_gap(id, p.prediction.offset, to);
      if (from >= to) continue;
      to = std::min(to, from + budget);
      const std::uint64_t bytes = to - from;
      if (l.in_flight_bytes > 0 && l.in_flight_bytes + bytes > budget) {
        room = false;
        break;
      }
      l.in_flight[id] += bytes;
      l.in_flight_bytes += bytes;
      l.ensemble.issued(p.expert, bytes);
      took = true;
      if (out.empty() || out.back().dir != f.dir || group_bytes >= group_limit) {
        if (!out.empty()) group_limit = std::min(request_bytes, 2 * group_limit);
        out.push_back({f.dir, {}, {}, false});
        group_bytes = 0;
      }
      out.back().files.push_back(ahead_file(l, id, from, to));
      out.back().charged.push_back({id, from, to});
      group_bytes += bytes;
    }
  }
  out.insert(out.begin(), std::make_move_iterator(manifests.begin()), std::make_move_iterator(manifests.end()));
  return out;
}

// Asks for manifests at once; queues chunk requests, which go out in order
// while fewer than the limit are on their way. When one is in, its bytes
// leave the budget, the limit grows, the next queued go out, and the client's
// reading ahead goes on, unless part of it failed to arrive (then the
// client's next read plans again: a file that cannot be fetched is not
// asked for in a loop).
void launch(const std::shared_ptr<State>& st, const std::shared_ptr<Mount>& m, learn::ClientId client,
            std::vector<Fetch> fetches) {
  Learner& l = *m->learner;
  std::vector<std::pair<learn::ClientId, Fetch>> sending;
  {
    std::lock_guard lock(l.mu);
    if (l.on_wire == 0 && l.queued.empty()) l.wire_limit = kMinFetchesOnWire;  // a standstill
    for (auto& f : fetches)
      if (!f.manifests_only) l.queued.emplace_back(client, std::move(f));
    while (l.on_wire < l.wire_limit && !l.queued.empty()) {
      sending.push_back(std::move(l.queued.front()));
      l.queued.pop_front();
      ++l.on_wire;
    }
  }
  for (auto& f : fetches)
    if (f.manifests_only) fetch_manifests_ahead(st, m, std::move(f.dir), std::move(f.files));
  for (auto& [planned_for, f] : sending) {
    auto done = [st, m, planned_for, charged = std::move(f.charged)] {
      Learner& l = *m->learner;
      std::vector<Fetch> next;
      {
        std::lock_guard lock(l.mu);
        --l.on_wire;
        l.wire_limit = std::min(kMaxFetchesOnWire, l.wire_limit + 1);
        for (const Charged& c : charged) {
          auto it = l.in_flight.find(c.file);
          if (it == l.in_flight.end()) continue;
          const std::uint64_t bytes = c.to - c.from;
          l.in_flight_bytes -= std::min(l.in_flight_bytes, bytes);
          if ((it->second -= std::min(it->second, bytes)) == 0) l.in_flight.erase(it);
        }
        MountResidency residency(*st, *m, l);
        const bool arrived = std::all_of(charged.begin(), charged.end(), [&](const Charged& c) {
          return residency.covered(c.file, c.from, c.to - c.from, learn::Outlook::unknown());
        });
        if (arrived) next = plan(*st, *m, l, planned_for);
      }
      // Not from here: this runs as a fetch's last chunk lets go, and a
      // fetch with nothing to do ends at once (co_spawn may run inline).
      // Launched even with nothing new: the next queued request goes out.
      asio::post(st->executor, [st, m, planned_for, next = std::move(next)]() mutable {
        launch(st, m, planned_for, std::move(next));
      });
    };
    fetch_files_ahead(st, m, std::move(f.dir), std::move(f.files), std::move(done));
  }
}

// Lists hub directory `dir` (the mount's `rel`) into the catalog.
asio::awaitable<void> list_into_catalog(std::shared_ptr<Mount> m, std::uint64_t dir_hub_ino, std::string rel) {
  auto op = hub_listing(*m, dir_hub_ino, rel);
  auto listing = co_await std::move(op);
  if (!listing) {
    spdlog::debug("spoke {}: listing {} for the prefetcher failed: {}", m->name, rel, listing.error().message());
    co_return;
  }
  std::lock_guard lock(m->learner->mu);
  add_files(*m->learner, listing_files(m->hub_path(rel), *listing));
}

}  // namespace

namespace spoke_detail {

std::shared_ptr<Learner> make_learner() { return std::make_shared<Learner>(); }

void learn_read(const std::shared_ptr<State>& st, const std::shared_ptr<Mount>& m, kv::Store& kv, const OpContext& ctx,
                Ino ino, const std::string& path, const wire::Manifest& man, std::uint64_t offset, std::size_t bytes) {
  if (!m->learner) return;
  Learner& l = *m->learner;
  std::vector<Fetch> fetches;
  learn::ClientId client;
  {
    std::unique_lock lock(l.mu);
    auto id = l.catalog.find(path);
    if (!id) {
      // A file not seen yet: it joins now, its directory's other files once
      // listed (a dataset's listing is what a sampler's order refers to).
      const std::string dir(learn::Catalog::directory_of(path));
      const auto leaf = std::string_view(path).substr(dir.empty() ? 0 : dir.size() + 1);
      add_files(l, {{path, man.size, {dir, std::string(leaf), man.ino, man.version}}});
      id = l.catalog.find(path);
      if (l.listed.insert(dir).second) {
        lock.unlock();
        auto sh = shadow_of(*st, kv, ino);
        auto parent = sh ? shadow_of(*st, kv, sh->parent) : sh;
        if (parent && parent->mount == m->id)
          asio::co_spawn(st->executor, list_into_catalog(m, parent->hub_ino, parent->path), asio::detached);
        lock.lock();
      }
    } else if (l.files[*id].version != man.version) {
      l.files[*id].version = man.version;
      l.files[*id].hub_ino = man.ino;
    }
    client = client_of(l, ctx);
    l.ensemble.observe({l.now(), client, *id, offset, static_cast<std::uint32_t>(bytes)});
    fetches = plan(*st, *m, l, client);
  }
  launch(st, m, client, std::move(fetches));
}

learn::Outlook chunk_outlook(Mount& m, const std::string& path, std::uint64_t offset) {
  if (!m.learner) return learn::Outlook::unknown();
  Learner& l = *m.learner;
  std::lock_guard lock(l.mu);
  auto id = l.catalog.find(path);
  if (!id) return learn::Outlook::unknown();
  learn::Outlook o = l.ensemble.outlook(*id, offset, l.now());
  // The ensemble counts from the learner's origin, the chunk cache from the
  // steady clock's epoch.
  const learn::Time origin =
      std::chrono::duration_cast<std::chrono::nanoseconds>(l.origin.time_since_epoch()).count();
  if (o.expected != learn::kNever) o.expected += origin;
  if (o.deadline != learn::kNever) o.deadline += origin;
  return o;
}

std::vector<SpokeExpertStats> learn_stats(Mount& m) {
  std::vector<SpokeExpertStats> out;
  if (!m.learner) return out;
  std::lock_guard lock(m.learner->mu);
  for (const learn::ExpertStats& e : m.learner->ensemble.stats())
    out.push_back({e.name, e.weight, e.precision(), e.coverage(), e.timeliness(), e.predictions, e.used, e.timely,
                   e.issued, e.issued_bytes});
  return out;
}

}  // namespace spoke_detail

Task<void> Spokes::hint(const OpContext& ctx, Ino dir, SpokeHint hint) {
  auto wop = readable_dir(*this, ns_, *state_, ctx, dir);
  auto w = co_await std::move(wop);
  if (!w) co_return w.error();
  std::shared_ptr<Mount> m = w->mount;
  if (!m->learner) co_return Errc::not_supported;
  if (hint.seeded && (hint.seeded->world_size == 0 || hint.seeded->rank >= hint.seeded->world_size))
    co_return Errc::invalid;
  if (!hint.seeded && hint.order.empty()) co_return Errc::invalid;
  Learner& l = *m->learner;
  const std::string hub_dir = m->hub_path(w->shadow.path);
  {
    std::lock_guard lock(l.mu);
    auto last = l.hints.find(client_of(l, ctx));
    if (last != l.hints.end() && last->second.first == hub_dir && last->second.second == hint) co_return Status{};
  }
  // The directories the order's files are in (below `dir`), each listed
  // into the catalog: a seeded order refers to `dir`'s listing.
  std::set<std::string> subdirs{""};
  for (const auto& p : hint.order) {
    if (index_entry_fault(p)) co_return Errc::invalid;
    const std::size_t slash = p.rfind('/');
    subdirs.insert(slash == std::string::npos ? std::string() : p.substr(0, slash));
  }
  for (const auto& sub : subdirs) {
    auto at = co_await walk(ctx, dir, sub);
    if (!at) co_return at.error();
    if (at->type != FileType::directory) co_return Errc::not_dir;
    auto sw = where(*state_, *ns_.kv, at->ino);
    if (!sw) co_return sw.error();
    auto op = hub_listing(*m, sw->shadow.hub_ino, sw->shadow.path);
    auto listing = co_await std::move(op);
    if (!listing) co_return listing.error();
    std::lock_guard lock(l.mu);
    l.listed.insert(m->hub_path(sw->shadow.path));
    add_files(l, listing_files(m->hub_path(sw->shadow.path), *listing));
  }
  std::vector<Fetch> fetches;
  learn::ClientId client;
  {
    std::lock_guard lock(l.mu);
    client = client_of(l, ctx);
    learn::JobHint job;
    job.client = client;
    auto dataset = l.catalog.find_dataset(hub_dir);
    for (const auto& p : hint.order) {
      auto id = l.catalog.find(join(hub_dir, p));
      if (!id) co_return Errc::not_found;
      job.order.push_back(*id);
    }
    if (job.order.empty() && !dataset) co_return Errc::invalid;  // no files to shuffle
    job.dataset = dataset ? *dataset : l.catalog.dataset_of(job.order.front());
    if (hint.seeded)
      job.seeded = learn::SamplerSpec{hint.seeded->seed, hint.seeded->epoch, hint.seeded->world_size,
                                      hint.seeded->rank, hint.seeded->drop_last};
    l.ensemble.hint(job);
    l.hints[client] = {hub_dir, std::move(hint)};
    fetches = plan(*state_, *m, l, client);
  }
  launch(state_, m, client, std::move(fetches));
  co_return Status{};
}

Task<void> Namespace::spoke_hint(const OpContext& ctx, Ino dir, const SpokeHint& hint) {
  if (auto s = impl_->check_ctx(ctx, std::chrono::steady_clock::now()); !s) co_return s.error();
  if (!impl_->spokes || impl_->closed || !impl_->spokes->serves(dir)) co_return Errc::invalid;
  auto op = impl_->spokes->hint(ctx, dir, hint);
  co_return co_await std::move(op);
}

}  // namespace weft::ns
