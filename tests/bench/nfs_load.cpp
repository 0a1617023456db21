// The NFS benchmark's client (tests/bench/nfs runs it against weft and
// against nfs-ganesha): libnfs's raw RPC layer with calls kept in flight,
// the same for both servers. Prints one "figure value unit" line each.
//
//   weft_nfs_load NFS_PORT MOUNT_PORT EXPORT SEQ_MIB SMALL_FILES OPS
//   weft_nfs_load meta NFS_PORT MOUNT_PORT EXPORT FILES OPS
//       metadata only (tests/bench/scaleout): FILES creates, then OPS
//       lookups, getattrs and whole listings (READDIRPLUS) of a directory
//       of 100 files, 64 calls in flight
#include "../protocols/nfs/libnfs_rpc.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>

using namespace weft::nfs_test;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void expect_ok(bool ok, int status, const char* what) {
  if (!ok || status != NFS3_OK) fail(std::string(what) + " failed with status " + std::to_string(status));
}

struct Client {
  Rpc& nfs;

  Fh mkdir(const Fh& dir, const std::string& name) {
    MKDIR3args a{};
    a.where.dir = fh3(dir);
    a.where.name = const_cast<char*>(name.c_str());
    a.attributes.mode.set_it = 1;
    a.attributes.mode.set_mode3_u.mode = 0755;
    Fh out;
    int st = -1;
    bool ok = nfs.call<MKDIR3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_mkdir_async(nfs.ctx(), cb, &a, d); },
                                  [&](MKDIR3res& r) {
                                    st = r.status;
                                    if (st == NFS3_OK) out = fh_of(r.MKDIR3res_u.resok.obj.post_op_fh3_u.handle);
                                  });
    expect_ok(ok, st, "MKDIR");
    return out;
  }

  // Creates names[i] in dir, 64 in flight; their handles.
  std::vector<Fh> create(const Fh& dir, const std::vector<std::string>& names) {
    std::vector<CREATE3args> args(names.size());
    std::vector<Fh> out(names.size());
    for (std::size_t i = 0; i < names.size(); ++i) {
      args[i].where.dir = fh3(dir);
      args[i].where.name = const_cast<char*>(names[i].c_str());
      args[i].how.mode = UNCHECKED;
      args[i].how.createhow3_u.obj_attributes.mode.set_it = 1;
      args[i].how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0644;
    }
    nfs.pipeline(
        names.size(), 64, [&](std::size_t i, rpc_cb cb, void* p) { return rpc_nfs3_create_async(nfs.ctx(), cb, &args[i], p); },
        [&](std::size_t i, int status, void* data) {
          auto* r = static_cast<CREATE3res*>(data);
          expect_ok(status == RPC_STATUS_SUCCESS, r ? r->status : -1, "CREATE");
          out[i] = fh_of(r->CREATE3res_u.resok.obj.post_op_fh3_u.handle);
        });
    return out;
  }

  // WRITEs `count` pieces of data (piece i to files[file_of(i)] at offset_of(i)).
  void write(std::size_t count, std::size_t window, const std::string& data,
             const std::function<std::pair<const Fh*, std::uint64_t>(std::size_t)>& where) {
    std::vector<WRITE3args> args(count);
    nfs.pipeline(
        count, window,
        [&](std::size_t i, rpc_cb cb, void* p) {
          auto [fh, offset] = where(i);
          args[i].file = fh3(*fh);
          args[i].offset = offset;
          args[i].count = static_cast<count3>(data.size());
          args[i].stable = UNSTABLE;
          args[i].data.data_len = static_cast<u_int>(data.size());
          args[i].data.data_val = const_cast<char*>(data.data());
          return rpc_nfs3_write_async(nfs.ctx(), cb, &args[i], p);
        },
        [&](std::size_t, int status, void* data) {
          auto* r = static_cast<WRITE3res*>(data);
          expect_ok(status == RPC_STATUS_SUCCESS, r ? r->status : -1, "WRITE");
        });
  }

  void commit(const std::vector<Fh>& files) {
    std::vector<COMMIT3args> args(files.size());
    nfs.pipeline(
        files.size(), 64,
        [&](std::size_t i, rpc_cb cb, void* p) {
          args[i].file = fh3(files[i]);
          return rpc_nfs3_commit_async(nfs.ctx(), cb, &args[i], p);
        },
        [&](std::size_t, int status, void* data) {
          auto* r = static_cast<COMMIT3res*>(data);
          expect_ok(status == RPC_STATUS_SUCCESS, r ? r->status : -1, "COMMIT");
        });
  }

  // READs `count` pieces of `size` bytes; the bytes that came back.
  std::uint64_t read(std::size_t count, std::size_t window, std::uint32_t size,
                     const std::function<std::pair<const Fh*, std::uint64_t>(std::size_t)>& where) {
    std::vector<READ3args> args(count);
    std::uint64_t bytes = 0;
    nfs.pipeline(
        count, window,
        [&](std::size_t i, rpc_cb cb, void* p) {
          auto [fh, offset] = where(i);
          args[i].file = fh3(*fh);
          args[i].offset = offset;
          args[i].count = size;
          return rpc_nfs3_read_async(nfs.ctx(), cb, &args[i], p);
        },
        [&](std::size_t, int status, void* data) {
          auto* r = static_cast<READ3res*>(data);
          expect_ok(status == RPC_STATUS_SUCCESS, r ? r->status : -1, "READ");
          bytes += r->READ3res_u.resok.count;
        });
    return bytes;
  }

  std::vector<Fh> lookup(const Fh& dir, const std::vector<std::string>& names, std::size_t window) {
    std::vector<LOOKUP3args> args(names.size());
    std::vector<Fh> out(names.size());
    nfs.pipeline(
        names.size(), window,
        [&](std::size_t i, rpc_cb cb, void* p) {
          args[i].what.dir = fh3(dir);
          args[i].what.name = const_cast<char*>(names[i].c_str());
          return rpc_nfs3_lookup_async(nfs.ctx(), cb, &args[i], p);
        },
        [&](std::size_t i, int status, void* data) {
          auto* r = static_cast<LOOKUP3res*>(data);
          expect_ok(status == RPC_STATUS_SUCCESS, r ? r->status : -1, "LOOKUP");
          out[i] = fh_of(r->LOOKUP3res_u.resok.object);
        });
    return out;
  }

  // `count` READDIRPLUS calls of dir's first page (all of a small directory).
  void readdirplus(const Fh& dir, std::size_t count, std::size_t window, std::size_t expect) {
    READDIRPLUS3args a{};
    a.dir = fh3(dir);
    a.dircount = 8192;
    a.maxcount = 65536;
    nfs.pipeline(
        count, window, [&](std::size_t, rpc_cb cb, void* p) { return rpc_nfs3_readdirplus_async(nfs.ctx(), cb, &a, p); },
        [&](std::size_t, int status, void* data) {
          auto* r = static_cast<READDIRPLUS3res*>(data);
          expect_ok(status == RPC_STATUS_SUCCESS, r ? r->status : -1, "READDIRPLUS");
          std::size_t n = 0;
          for (auto* e = r->READDIRPLUS3res_u.resok.reply.entries; e; e = e->nextentry) ++n;
          if (n < expect || !r->READDIRPLUS3res_u.resok.reply.eof)
            fail("READDIRPLUS listed " + std::to_string(n) + " entries, not all " + std::to_string(expect));
        });
  }

  void getattr(const Fh& fh, std::size_t count, std::size_t window) {
    GETATTR3args a{fh3(fh)};
    nfs.pipeline(
        count, window, [&](std::size_t, rpc_cb cb, void* p) { return rpc_nfs3_getattr_async(nfs.ctx(), cb, &a, p); },
        [&](std::size_t, int status, void* data) {
          auto* r = static_cast<GETATTR3res*>(data);
          expect_ok(status == RPC_STATUS_SUCCESS, r ? r->status : -1, "GETATTR");
        });
  }
};

// Metadata operations per second, 64 in flight: `ops` LOOKUPs cycling over
// `names` in dir, then `ops` GETATTRs of `file`.
void lookup_and_getattr_rates(Client& c, const Fh& dir, const std::vector<std::string>& names, const Fh& file,
                              std::size_t ops) {
  std::vector<std::string> lookups(ops);
  for (std::size_t i = 0; i < ops; ++i) lookups[i] = names[i % names.size()];
  auto t = std::chrono::steady_clock::now();
  c.lookup(dir, lookups, 64);
  std::printf("lookup %.0f ops/s\n", static_cast<double>(ops) / seconds_since(t));
  t = std::chrono::steady_clock::now();
  c.getattr(file, ops, 64);
  std::printf("getattr %.0f ops/s\n", static_cast<double>(ops) / seconds_since(t));
}

Fh mount_root(int mount_port, std::string path) {
  Fh root;
  Rpc mount(mount_port);
  int st = -1;
  bool ok = mount.call<mountres3>(
      [&](rpc_cb cb, void* d) { return rpc_mount3_mnt_async(mount.ctx(), cb, path.data(), d); },
      [&](mountres3& r) {
        st = r.fhs_status;
        if (st == MNT3_OK)
          root = Fh(r.mountres3_u.mountinfo.fhandle.fhandle3_val, r.mountres3_u.mountinfo.fhandle.fhandle3_len);
      });
  expect_ok(ok, st, "MNT");
  return root;
}

// The metadata figures of tests/bench/scaleout.
int metadata_only(int nfs_port, int mount_port, const std::string& export_path, std::size_t files,
                  std::size_t ops) {
  Fh root = mount_root(mount_port, export_path);
  Rpc nfs(nfs_port, static_cast<std::uint32_t>(getuid()), static_cast<std::uint32_t>(getgid()), NFS_PROGRAM, NFS_V3);
  Client c{nfs};
  const std::string tag = std::to_string(getpid());
  Fh dir = c.mkdir(root, "meta-" + tag);
  std::vector<std::string> names(files);
  for (std::size_t i = 0; i < files; ++i) names[i] = "f" + std::to_string(i);
  auto t = std::chrono::steady_clock::now();
  std::vector<Fh> made = c.create(dir, names);
  std::printf("create %.0f ops/s\n", static_cast<double>(files) / seconds_since(t));
  lookup_and_getattr_rates(c, dir, names, made[0], ops);
  Fh listed = c.mkdir(root, "list-" + tag);
  std::vector<std::string> hundred(100);
  for (std::size_t i = 0; i < hundred.size(); ++i) hundred[i] = "entry-" + std::to_string(i);
  c.create(listed, hundred);
  const std::size_t listings = std::max<std::size_t>(ops / 10, 1);
  t = std::chrono::steady_clock::now();
  c.readdirplus(listed, listings, 64, hundred.size());
  std::printf("readdir %.0f ops/s\n", static_cast<double>(listings) / seconds_since(t));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::strcmp(argv[1], "meta") == 0)
    return metadata_only(std::atoi(argv[2]), std::atoi(argv[3]), argv[4], std::strtoull(argv[5], nullptr, 10),
                         std::strtoull(argv[6], nullptr, 10));
  if (argc != 7) {
    std::fprintf(stderr,
                 "usage: weft_nfs_load NFS_PORT MOUNT_PORT EXPORT SEQ_MIB SMALL_FILES OPS\n"
                 "       weft_nfs_load meta NFS_PORT MOUNT_PORT EXPORT FILES OPS\n");
    return 2;
  }
  const int nfs_port = std::atoi(argv[1]);
  const int mount_port = std::atoi(argv[2]);
  const std::string export_path = argv[3];
  const std::size_t seq_mib = std::strtoull(argv[4], nullptr, 10);
  const std::size_t small_files = std::strtoull(argv[5], nullptr, 10);
  const std::size_t ops = std::strtoull(argv[6], nullptr, 10);

  Fh root = mount_root(mount_port, export_path);
  Rpc nfs(nfs_port, static_cast<std::uint32_t>(getuid()), static_cast<std::uint32_t>(getgid()), NFS_PROGRAM, NFS_V3);
  Client c{nfs};
  std::uint32_t rtmax = 0, wtmax = 0;
  {
    FSINFO3args a{fh3(root)};
    int st = -1;
    bool ok = nfs.call<FSINFO3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_fsinfo_async(nfs.ctx(), cb, &a, d); },
                                   [&](FSINFO3res& r) {
                                     st = r.status;
                                     rtmax = r.FSINFO3res_u.resok.rtmax;
                                     wtmax = r.FSINFO3res_u.resok.wtmax;
                                   });
    expect_ok(ok, st, "FSINFO");
  }
  const std::uint32_t io = std::min<std::uint32_t>({1u << 20, rtmax, wtmax});
  std::printf("io_size %u bytes\n", io);

  Fh dir = c.mkdir(root, "nfs-bench-" + std::to_string(getpid()));
  std::mt19937_64 rng(42);
  std::string block(io, '\0');
  for (auto& ch : block) ch = static_cast<char>(rng());

  // Sequential write, then read, of one large file.
  const std::uint64_t seq_bytes = static_cast<std::uint64_t>(seq_mib) << 20;
  const std::size_t pieces = static_cast<std::size_t>(seq_bytes / io);
  std::vector<std::string> big_name{"large.bin"};
  std::vector<Fh> big = c.create(dir, big_name);
  auto t = std::chrono::steady_clock::now();
  c.write(pieces, 16, block, [&](std::size_t i) { return std::make_pair(&big[0], std::uint64_t{i} * io); });
  c.commit(big);
  std::printf("seq_write %.1f MiB/s\n", static_cast<double>(seq_bytes) / (1 << 20) / seconds_since(t));
  t = std::chrono::steady_clock::now();
  std::uint64_t got = c.read(pieces, 16, io, [&](std::size_t i) { return std::make_pair(&big[0], std::uint64_t{i} * io); });
  if (got != seq_bytes) fail("short sequential read");
  std::printf("seq_read %.1f MiB/s\n", static_cast<double>(seq_bytes) / (1 << 20) / seconds_since(t));

  // Many 64 KiB files: written (setup), then each looked up and read.
  constexpr std::uint32_t kSmall = 64 * 1024;
  Fh small_dir = c.mkdir(dir, "small");
  std::vector<std::string> names(small_files);
  for (std::size_t i = 0; i < small_files; ++i) names[i] = "f" + std::to_string(i);
  t = std::chrono::steady_clock::now();
  std::vector<Fh> files = c.create(small_dir, names);
  std::string small_block = block.substr(0, kSmall);
  c.write(small_files, 64, small_block, [&](std::size_t i) { return std::make_pair(&files[i], std::uint64_t{0}); });
  c.commit(files);
  std::printf("small_write %.1f files/s\n", static_cast<double>(small_files) / seconds_since(t));
  t = std::chrono::steady_clock::now();
  std::vector<Fh> found = c.lookup(small_dir, names, 64);
  got = c.read(small_files, 64, kSmall, [&](std::size_t i) { return std::make_pair(&found[i], std::uint64_t{0}); });
  if (got != static_cast<std::uint64_t>(small_files) * kSmall) fail("short small-file read");
  std::printf("small_read %.1f files/s\n", static_cast<double>(small_files) / seconds_since(t));

  lookup_and_getattr_rates(c, small_dir, names, big[0], ops);
  return 0;
}
