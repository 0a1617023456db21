// A test client on the libnfs C API (raw RPC layer, so each NFSv3, MOUNT and
// portmapper procedure is called by itself and its reply checked field by
// field). Driven by nfs_test.py against a running `weft serve`.
//
//   nfs_client procedures PORT EXPORT   every procedure, good and bad input
//   nfs_client bigdir PORT EXPORT N     N files listed by READDIR and READDIRPLUS
//   nfs_client denied PORT EXPORT UID unmapped|readonly
//                                       AUTH_SYS of an unmapped or read-only uid
//   nfs_client put PORT EXPORT NAME FILE  pipelined UNSTABLE WRITEs, then COMMIT
//   nfs_client probe PORT EXPORT NAME   prints NAME's handle and the write verifier
//   nfs_client getattr PORT HEXHANDLE   GETATTR of a handle from an earlier run
//
// Prints one line per check; exits 1 at the first failure.
#include "libnfs_rpc.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace {

using namespace weft::nfs_test;

void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
  std::printf("ok   %s\n", what.c_str());
}

struct Attr {
  std::uint32_t type = 0, mode = 0, nlink = 0;
  std::uint64_t size = 0, fileid = 0;
  std::uint32_t ctime_s = 0, ctime_ns = 0;
};
Attr attr_of(const fattr3& a) {
  return Attr{static_cast<std::uint32_t>(a.type), a.mode, a.nlink, a.size, a.fileid, a.ctime.seconds, a.ctime.nseconds};
}

// The NFSv3 calls the checks use; each returns the nfsstat3.
class Nfs {
 public:
  explicit Nfs(Rpc& rpc) : rpc_(rpc) {}

  int mnt(const std::string& path, Fh* root) {
    int st = -1;
    std::string p = path;
    bool ok = rpc_.call<mountres3>(
        [&](rpc_cb cb, void* d) { return rpc_mount3_mnt_async(rpc_.ctx(), cb, p.data(), d); },
        [&](mountres3& r) {
          st = r.fhs_status;
          if (st == MNT3_OK && root) *root = Fh(r.mountres3_u.mountinfo.fhandle.fhandle3_val,
                                                r.mountres3_u.mountinfo.fhandle.fhandle3_len);
        });
    if (!ok) fail("MNT rpc");
    return st;
  }

  int getattr(const Fh& fh, Attr* out = nullptr) {
    GETATTR3args a{fh3(fh)};
    int st = -1;
    expect(rpc_.call<GETATTR3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_getattr_async(rpc_.ctx(), cb, &a, d); },
                                  [&](GETATTR3res& r) {
                                    st = r.status;
                                    if (st == NFS3_OK && out) *out = attr_of(r.GETATTR3res_u.resok.obj_attributes);
                                  }),
           "GETATTR");
    return st;
  }

  int lookup(const Fh& dir, const std::string& name, Fh* out = nullptr, Attr* attr = nullptr) {
    LOOKUP3args a{};
    a.what.dir = fh3(dir);
    a.what.name = const_cast<char*>(name.c_str());
    int st = -1;
    expect(rpc_.call<LOOKUP3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_lookup_async(rpc_.ctx(), cb, &a, d); },
                                 [&](LOOKUP3res& r) {
                                   st = r.status;
                                   if (st != NFS3_OK) return;
                                   if (out) *out = fh_of(r.LOOKUP3res_u.resok.object);
                                   if (attr && r.LOOKUP3res_u.resok.obj_attributes.attributes_follow)
                                     *attr = attr_of(r.LOOKUP3res_u.resok.obj_attributes.post_op_attr_u.attributes);
                                 }),
           "LOOKUP");
    return st;
  }

  int create(const Fh& dir, const std::string& name, createmode3 how, std::uint32_t mode, const char* verf,
             Fh* out = nullptr, bool* wcc_after = nullptr) {
    CREATE3args a{};
    a.where.dir = fh3(dir);
    a.where.name = const_cast<char*>(name.c_str());
    a.how.mode = how;
    if (how == EXCLUSIVE) {
      std::memcpy(a.how.createhow3_u.verf, verf, NFS3_CREATEVERFSIZE);
    } else {
      a.how.createhow3_u.obj_attributes.mode.set_it = 1;
      a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = mode;
    }
    int st = -1;
    expect(rpc_.call<CREATE3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_create_async(rpc_.ctx(), cb, &a, d); },
                                 [&](CREATE3res& r) {
                                   st = r.status;
                                   if (st == NFS3_OK) {
                                     if (out && r.CREATE3res_u.resok.obj.handle_follows)
                                       *out = fh_of(r.CREATE3res_u.resok.obj.post_op_fh3_u.handle);
                                     if (wcc_after) *wcc_after = r.CREATE3res_u.resok.dir_wcc.before.attributes_follow &&
                                                                 r.CREATE3res_u.resok.dir_wcc.after.attributes_follow;
                                   }
                                 }),
           "CREATE");
    return st;
  }

  int mkdir(const Fh& dir, const std::string& name, Fh* out = nullptr) {
    MKDIR3args a{};
    a.where.dir = fh3(dir);
    a.where.name = const_cast<char*>(name.c_str());
    a.attributes.mode.set_it = 1;
    a.attributes.mode.set_mode3_u.mode = 0755;
    int st = -1;
    expect(rpc_.call<MKDIR3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_mkdir_async(rpc_.ctx(), cb, &a, d); },
                                [&](MKDIR3res& r) {
                                  st = r.status;
                                  if (st == NFS3_OK && out && r.MKDIR3res_u.resok.obj.handle_follows)
                                    *out = fh_of(r.MKDIR3res_u.resok.obj.post_op_fh3_u.handle);
                                }),
           "MKDIR");
    return st;
  }

  int write(const Fh& fh, std::uint64_t off, const std::string& data, stable_how how, std::string* verf = nullptr,
            int* committed = nullptr) {
    WRITE3args a{};
    a.file = fh3(fh);
    a.offset = off;
    a.count = static_cast<count3>(data.size());
    a.stable = how;
    a.data.data_len = static_cast<u_int>(data.size());
    a.data.data_val = const_cast<char*>(data.data());
    int st = -1;
    expect(rpc_.call<WRITE3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_write_async(rpc_.ctx(), cb, &a, d); },
                                [&](WRITE3res& r) {
                                  st = r.status;
                                  if (st != NFS3_OK) return;
                                  if (r.WRITE3res_u.resok.count != data.size()) st = -2;
                                  if (verf) *verf = std::string(r.WRITE3res_u.resok.verf, NFS3_WRITEVERFSIZE);
                                  if (committed) *committed = r.WRITE3res_u.resok.committed;
                                }),
           "WRITE");
    return st;
  }

  int read(const Fh& fh, std::uint64_t off, std::uint32_t count, std::string* out, bool* eof = nullptr) {
    READ3args a{};
    a.file = fh3(fh);
    a.offset = off;
    a.count = count;
    int st = -1;
    expect(rpc_.call<READ3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_read_async(rpc_.ctx(), cb, &a, d); },
                               [&](READ3res& r) {
                                 st = r.status;
                                 if (st != NFS3_OK) return;
                                 if (out) *out = std::string(r.READ3res_u.resok.data.data_val, r.READ3res_u.resok.data.data_len);
                                 if (eof) *eof = r.READ3res_u.resok.eof;
                               }),
           "READ");
    return st;
  }

  int commit(const Fh& fh, std::string* verf) {
    COMMIT3args a{};
    a.file = fh3(fh);
    int st = -1;
    expect(rpc_.call<COMMIT3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_commit_async(rpc_.ctx(), cb, &a, d); },
                                 [&](COMMIT3res& r) {
                                   st = r.status;
                                   if (st == NFS3_OK && verf) *verf = std::string(r.COMMIT3res_u.resok.verf, NFS3_WRITEVERFSIZE);
                                 }),
           "COMMIT");
    return st;
  }

  int setattr(const Fh& fh, const sattr3& s, const Attr* guard = nullptr) {
    SETATTR3args a{};
    a.object = fh3(fh);
    a.new_attributes = s;
    if (guard) {
      a.guard.check = 1;
      a.guard.sattrguard3_u.obj_ctime.seconds = guard->ctime_s;
      a.guard.sattrguard3_u.obj_ctime.nseconds = guard->ctime_ns;
    }
    int st = -1;
    expect(rpc_.call<SETATTR3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_setattr_async(rpc_.ctx(), cb, &a, d); },
                                  [&](SETATTR3res& r) { st = r.status; }),
           "SETATTR");
    return st;
  }

  int access(const Fh& fh, std::uint32_t want, std::uint32_t* got) {
    ACCESS3args a{fh3(fh), want};
    int st = -1;
    expect(rpc_.call<ACCESS3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_access_async(rpc_.ctx(), cb, &a, d); },
                                 [&](ACCESS3res& r) {
                                   st = r.status;
                                   if (st == NFS3_OK) *got = r.ACCESS3res_u.resok.access;
                                 }),
           "ACCESS");
    return st;
  }

  int symlink(const Fh& dir, const std::string& name, const std::string& target) {
    SYMLINK3args a{};
    a.where.dir = fh3(dir);
    a.where.name = const_cast<char*>(name.c_str());
    a.symlink.symlink_data = const_cast<char*>(target.c_str());
    int st = -1;
    expect(rpc_.call<SYMLINK3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_symlink_async(rpc_.ctx(), cb, &a, d); },
                                  [&](SYMLINK3res& r) { st = r.status; }),
           "SYMLINK");
    return st;
  }

  int readlink(const Fh& fh, std::string* target) {
    READLINK3args a{fh3(fh)};
    int st = -1;
    expect(rpc_.call<READLINK3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_readlink_async(rpc_.ctx(), cb, &a, d); },
                                   [&](READLINK3res& r) {
                                     st = r.status;
                                     if (st == NFS3_OK) *target = r.READLINK3res_u.resok.data;
                                   }),
           "READLINK");
    return st;
  }

  int mknod(const Fh& dir, const std::string& name, ftype3 type) {
    MKNOD3args a{};
    a.where.dir = fh3(dir);
    a.where.name = const_cast<char*>(name.c_str());
    a.what.type = type;
    int st = -1;
    expect(rpc_.call<MKNOD3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_mknod_async(rpc_.ctx(), cb, &a, d); },
                                [&](MKNOD3res& r) { st = r.status; }),
           "MKNOD");
    return st;
  }

  int remove(const Fh& dir, const std::string& name) {
    REMOVE3args a{};
    a.object.dir = fh3(dir);
    a.object.name = const_cast<char*>(name.c_str());
    int st = -1;
    expect(rpc_.call<REMOVE3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_remove_async(rpc_.ctx(), cb, &a, d); },
                                 [&](REMOVE3res& r) { st = r.status; }),
           "REMOVE");
    return st;
  }

  int rmdir(const Fh& dir, const std::string& name) {
    RMDIR3args a{};
    a.object.dir = fh3(dir);
    a.object.name = const_cast<char*>(name.c_str());
    int st = -1;
    expect(rpc_.call<RMDIR3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_rmdir_async(rpc_.ctx(), cb, &a, d); },
                                [&](RMDIR3res& r) { st = r.status; }),
           "RMDIR");
    return st;
  }

  int rename(const Fh& from, const std::string& fname, const Fh& to, const std::string& tname) {
    RENAME3args a{};
    a.from.dir = fh3(from);
    a.from.name = const_cast<char*>(fname.c_str());
    a.to.dir = fh3(to);
    a.to.name = const_cast<char*>(tname.c_str());
    int st = -1;
    expect(rpc_.call<RENAME3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_rename_async(rpc_.ctx(), cb, &a, d); },
                                 [&](RENAME3res& r) { st = r.status; }),
           "RENAME");
    return st;
  }

  int link(const Fh& file, const Fh& dir, const std::string& name) {
    LINK3args a{};
    a.file = fh3(file);
    a.link.dir = fh3(dir);
    a.link.name = const_cast<char*>(name.c_str());
    int st = -1;
    expect(rpc_.call<LINK3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_link_async(rpc_.ctx(), cb, &a, d); },
                               [&](LINK3res& r) { st = r.status; }),
           "LINK");
    return st;
  }

  // Lists a directory to the end, page by page; names in order.
  int readdir(const Fh& dir, bool plus, std::uint32_t count, std::vector<std::string>* names, int* pages = nullptr,
              bool* attrs_and_handles = nullptr) {
    std::uint64_t cookie = 0;
    char verf[NFS3_COOKIEVERFSIZE] = {};
    bool eof = false;
    int st = NFS3_OK;
    if (attrs_and_handles) *attrs_and_handles = true;
    while (!eof && st == NFS3_OK) {
      if (pages) ++*pages;
      std::size_t before = names->size();
      if (plus) {
        READDIRPLUS3args a{};
        a.dir = fh3(dir);
        a.cookie = cookie;
        std::memcpy(a.cookieverf, verf, sizeof verf);
        a.dircount = count;
        a.maxcount = count * 4;
        expect(rpc_.call<READDIRPLUS3res>(
                   [&](rpc_cb cb, void* d) { return rpc_nfs3_readdirplus_async(rpc_.ctx(), cb, &a, d); },
                   [&](READDIRPLUS3res& r) {
                     st = r.status;
                     if (st != NFS3_OK) return;
                     auto& ok = r.READDIRPLUS3res_u.resok;
                     std::memcpy(verf, ok.cookieverf, sizeof verf);
                     for (entryplus3* e = ok.reply.entries; e; e = e->nextentry) {
                       names->push_back(e->name);
                       cookie = e->cookie;
                       if (attrs_and_handles && (!e->name_attributes.attributes_follow || !e->name_handle.handle_follows))
                         *attrs_and_handles = false;
                     }
                     eof = ok.reply.eof;
                   }),
               "READDIRPLUS");
      } else {
        READDIR3args a{};
        a.dir = fh3(dir);
        a.cookie = cookie;
        std::memcpy(a.cookieverf, verf, sizeof verf);
        a.count = count;
        expect(rpc_.call<READDIR3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_readdir_async(rpc_.ctx(), cb, &a, d); },
                                      [&](READDIR3res& r) {
                                        st = r.status;
                                        if (st != NFS3_OK) return;
                                        auto& ok = r.READDIR3res_u.resok;
                                        std::memcpy(verf, ok.cookieverf, sizeof verf);
                                        for (entry3* e = ok.reply.entries; e; e = e->nextentry) {
                                          names->push_back(e->name);
                                          cookie = e->cookie;
                                        }
                                        eof = ok.reply.eof;
                                      }),
               "READDIR");
      }
      if (st == NFS3_OK && !eof && names->size() == before) fail("READDIR page without entries and not at eof");
    }
    return st;
  }

  int readdir_with_verf(const Fh& dir, std::uint64_t cookie, const char* verf) {
    READDIR3args a{};
    a.dir = fh3(dir);
    a.cookie = cookie;
    std::memcpy(a.cookieverf, verf, NFS3_COOKIEVERFSIZE);
    a.count = 4096;
    int st = -1;
    expect(rpc_.call<READDIR3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_readdir_async(rpc_.ctx(), cb, &a, d); },
                                  [&](READDIR3res& r) { st = r.status; }),
           "READDIR");
    return st;
  }

  int fsinfo(const Fh& fh, FSINFO3resok* out) {
    FSINFO3args a{fh3(fh)};
    int st = -1;
    expect(rpc_.call<FSINFO3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_fsinfo_async(rpc_.ctx(), cb, &a, d); },
                                 [&](FSINFO3res& r) {
                                   st = r.status;
                                   if (st == NFS3_OK) *out = r.FSINFO3res_u.resok;
                                 }),
           "FSINFO");
    return st;
  }

  int fsstat(const Fh& fh, std::uint64_t* total) {
    FSSTAT3args a{fh3(fh)};
    int st = -1;
    expect(rpc_.call<FSSTAT3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_fsstat_async(rpc_.ctx(), cb, &a, d); },
                                 [&](FSSTAT3res& r) {
                                   st = r.status;
                                   if (st == NFS3_OK) *total = r.FSSTAT3res_u.resok.tbytes;
                                 }),
           "FSSTAT");
    return st;
  }

  int pathconf(const Fh& fh, std::uint32_t* name_max) {
    PATHCONF3args a{fh3(fh)};
    int st = -1;
    expect(rpc_.call<PATHCONF3res>([&](rpc_cb cb, void* d) { return rpc_nfs3_pathconf_async(rpc_.ctx(), cb, &a, d); },
                                   [&](PATHCONF3res& r) {
                                     st = r.status;
                                     if (st == NFS3_OK) *name_max = r.PATHCONF3res_u.resok.name_max;
                                   }),
           "PATHCONF");
    return st;
  }

 private:
  static void expect(bool rpc_ok, const char* what) {
    if (!rpc_ok) fail(std::string(what) + ": the RPC failed");
  }
  Rpc& rpc_;
};

std::string status_text(int st) { return std::to_string(st); }

void check_status(int got, int want, const std::string& what) {
  check(got == want, what + " (status " + status_text(got) + ", want " + status_text(want) + ")");
}

sattr3 no_change() { return sattr3{}; }

int procedures(int port, const std::string& export_path) {
  Rpc rpc(port);
  Nfs nfs(rpc);
  // Portmapper and NULL procedures.
  std::uint32_t mapped = 0;
  bool ok = rpc.call<uint32_t>(
      [&](rpc_cb cb, void* d) { return rpc_pmap2_getport_async(rpc.ctx(), NFS_PROGRAM, NFS_V3, IPPROTO_TCP, cb, d); },
      [&](uint32_t& p) { mapped = p; });
  check(ok && mapped == static_cast<std::uint32_t>(port), "PMAP GETPORT names this port for NFS v3");
  ok = rpc.call<char>([&](rpc_cb cb, void* d) { return rpc_mount3_null_async(rpc.ctx(), cb, d); }, [](char&) {});
  check(ok, "MOUNT NULL");
  ok = rpc.call<char>([&](rpc_cb cb, void* d) { return rpc_nfs3_null_async(rpc.ctx(), cb, d); }, [](char&) {});
  check(ok, "NFS NULL");
  // MOUNT: EXPORT lists the export; MNT of it and of unknown paths.
  bool listed = false;
  ok = rpc.call<exports>([&](rpc_cb cb, void* d) { return rpc_mount3_export_async(rpc.ctx(), cb, d); },
                         [&](exports& e) {
                           for (exportnode* n = e; n; n = n->ex_next)
                             if (export_path == n->ex_dir) listed = true;
                         });
  check(ok && listed, "MOUNT EXPORT lists " + export_path);
  Fh root;
  check_status(nfs.mnt(export_path, &root), MNT3_OK, "MNT " + export_path);
  check(root.size() <= 64, "the root handle is at most 64 bytes");
  check_status(nfs.mnt("/no-such-export", nullptr), MNT3ERR_NOENT, "MNT of an unknown export");
  check_status(nfs.mnt(export_path + "/no/such/dir", nullptr), MNT3ERR_NOENT, "MNT of a missing directory");
  bool dumped = false;
  ok = rpc.call<mountlist>([&](rpc_cb cb, void* d) { return rpc_mount3_dump_async(rpc.ctx(), cb, d); },
                           [&](mountlist& m) {
                             for (mountbody* b = m; b; b = b->ml_next)
                               if (export_path == b->ml_directory) dumped = true;
                           });
  check(ok && dumped, "MOUNT DUMP lists our mount");

  // File system information.
  FSINFO3resok info{};
  check_status(nfs.fsinfo(root, &info), NFS3_OK, "FSINFO");
  check(info.rtmax == 1u << 20 && info.wtmax == 1u << 20, "FSINFO rtmax and wtmax are 1 MiB");
  std::uint64_t total = 0;
  check_status(nfs.fsstat(root, &total), NFS3_OK, "FSSTAT");
  check(total > 0, "FSSTAT reports the size of the store");
  std::uint32_t name_max = 0;
  check_status(nfs.pathconf(root, &name_max), NFS3_OK, "PATHCONF");
  check(name_max == 255, "PATHCONF name_max is 255");

  // A fresh directory for this run; MNT of a sub-directory.
  const std::string top = "nfs-client-" + std::to_string(getpid());
  Fh dir;
  check_status(nfs.mkdir(root, top, &dir), NFS3_OK, "MKDIR " + top);
  check_status(nfs.mkdir(root, top, nullptr), NFS3ERR_EXIST, "MKDIR of an existing name");
  Fh sub_mounted;
  check_status(nfs.mnt(export_path + "/" + top, &sub_mounted), MNT3_OK, "MNT of a sub-directory");
  Attr da, sa;
  nfs.getattr(dir, &da);
  nfs.getattr(sub_mounted, &sa);
  check(da.fileid == sa.fileid && da.type == NF3DIR, "the sub-directory mount is that directory");
  check_status(nfs.lookup(root, std::string(300, 'n')), NFS3ERR_NAMETOOLONG, "LOOKUP of a 300-byte name");
  check_status(nfs.lookup(dir, "missing"), NFS3ERR_NOENT, "LOOKUP of a missing name");

  // CREATE, WRITE (all three stable modes), COMMIT, READ.
  Fh f1;
  bool wcc = false;
  check_status(nfs.create(dir, "f1", UNCHECKED, 0640, nullptr, &f1, &wcc), NFS3_OK, "CREATE UNCHECKED");
  check(wcc, "CREATE returns the directory's wcc attributes");
  Attr a1;
  check_status(nfs.getattr(f1, &a1), NFS3_OK, "GETATTR");
  check(a1.type == NF3REG && (a1.mode & 07777) == 0640 && a1.size == 0, "GETATTR type, mode and size");
  check_status(nfs.create(dir, "f1", GUARDED, 0640, nullptr), NFS3ERR_EXIST, "CREATE GUARDED of an existing name");
  std::string verf1, verf2, verf3;
  int committed = -1;
  check_status(nfs.write(f1, 0, "hello ", UNSTABLE, &verf1, &committed), NFS3_OK, "WRITE UNSTABLE");
  check_status(nfs.write(f1, 6, "nfs ", DATA_SYNC, &verf2, &committed), NFS3_OK, "WRITE DATA_SYNC");
  check(committed == DATA_SYNC || committed == FILE_SYNC, "WRITE DATA_SYNC is committed");
  check_status(nfs.write(f1, 10, "world", FILE_SYNC, nullptr, &committed), NFS3_OK, "WRITE FILE_SYNC");
  check(committed == FILE_SYNC, "WRITE FILE_SYNC is committed to FILE_SYNC");
  check_status(nfs.commit(f1, &verf3), NFS3_OK, "COMMIT");
  check(verf1 == verf2 && verf2 == verf3, "WRITE and COMMIT verifiers agree");
  std::string content;
  bool eof = false;
  check_status(nfs.read(f1, 0, 4096, &content, &eof), NFS3_OK, "READ");
  check(content == "hello nfs world" && eof, "READ returns what was written, with eof");
  check_status(nfs.read(f1, 6, 3, &content, &eof), NFS3_OK, "READ in the middle");
  check(content == "nfs" && !eof, "READ in the middle: bytes and no eof");
  check_status(nfs.read(dir, 0, 10, &content), NFS3ERR_ISDIR, "READ of a directory");
  check_status(nfs.write(dir, 0, "x", FILE_SYNC), NFS3ERR_ISDIR, "WRITE to a directory");

  // SETATTR: truncate, mode, guard.
  sattr3 s = no_change();
  s.size.set_it = 1;
  s.size.set_size3_u.size = 5;
  check_status(nfs.setattr(f1, s), NFS3_OK, "SETATTR size (truncate)");
  nfs.getattr(f1, &a1);
  check(a1.size == 5, "the file is truncated to 5 bytes");
  s = no_change();
  s.mode.set_it = 1;
  s.mode.set_mode3_u.mode = 0600;
  check_status(nfs.setattr(f1, s, &a1), NFS3_OK, "SETATTR mode with a matching guard");
  Attr stale_guard = a1;
  stale_guard.ctime_s -= 100;
  check_status(nfs.setattr(f1, s, &stale_guard), NFS3ERR_NOT_SYNC, "SETATTR with a stale guard");
  nfs.getattr(f1, &a1);
  check((a1.mode & 07777) == 0600, "SETATTR mode took effect");
  std::uint32_t granted = 0;
  check_status(nfs.access(f1, ACCESS3_READ | ACCESS3_MODIFY | ACCESS3_EXTEND, &granted), NFS3_OK, "ACCESS");
  check((granted & (ACCESS3_READ | ACCESS3_MODIFY)) == (ACCESS3_READ | ACCESS3_MODIFY), "ACCESS grants read and modify");

  // SYMLINK, READLINK, LINK, RENAME, MKNOD.
  check_status(nfs.symlink(dir, "s", "f1"), NFS3_OK, "SYMLINK");
  Fh sl;
  Attr sla;
  check_status(nfs.lookup(dir, "s", &sl, &sla), NFS3_OK, "LOOKUP of the symlink");
  check(sla.type == NF3LNK, "the symlink's type is NF3LNK");
  std::string target;
  check_status(nfs.readlink(sl, &target), NFS3_OK, "READLINK");
  check(target == "f1", "READLINK returns the target");
  check_status(nfs.readlink(f1, &target), NFS3ERR_INVAL, "READLINK of a regular file");
  check_status(nfs.link(f1, dir, "f2"), NFS3_OK, "LINK");
  nfs.getattr(f1, &a1);
  check(a1.nlink == 2, "LINK raises nlink to 2");
  check_status(nfs.rename(dir, "f2", dir, "f3"), NFS3_OK, "RENAME");
  check_status(nfs.lookup(dir, "f2"), NFS3ERR_NOENT, "the old name is gone after RENAME");
  Fh f3;
  check_status(nfs.lookup(dir, "f3", &f3), NFS3_OK, "the new name exists after RENAME");
  check_status(nfs.mknod(dir, "fifo", NF3FIFO), NFS3ERR_NOTSUPP, "MKNOD of a FIFO is not supported");
  check_status(nfs.mknod(dir, "chr", NF3CHR), NFS3ERR_NOTSUPP, "MKNOD of a device is not supported");

  // EXCLUSIVE create, retried with the same verifier.
  const char verf_a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const char verf_b[8] = {8, 7, 6, 5, 4, 3, 2, 1};
  Fh e1, e1_again;
  check_status(nfs.create(dir, "e1", EXCLUSIVE, 0, verf_a, &e1), NFS3_OK, "CREATE EXCLUSIVE");
  check_status(nfs.create(dir, "e1", EXCLUSIVE, 0, verf_a, &e1_again), NFS3_OK,
               "CREATE EXCLUSIVE retried with the same verifier");
  Attr ea, eb;
  nfs.getattr(e1, &ea);
  nfs.getattr(e1_again, &eb);
  check(ea.fileid == eb.fileid, "the retry returns the same file");
  check_status(nfs.create(dir, "e1", EXCLUSIVE, 0, verf_b, nullptr), NFS3ERR_EXIST,
               "CREATE EXCLUSIVE with another verifier");

  // READDIR and READDIRPLUS see every name.
  const std::set<std::string> expected{"f1", "f3", "s", "e1"};
  std::vector<std::string> names;
  check_status(nfs.readdir(dir, false, 4096, &names), NFS3_OK, "READDIR");
  check(std::set<std::string>(names.begin(), names.end()) == expected && names.size() == expected.size(),
        "READDIR lists exactly the directory's names");
  names.clear();
  bool complete = false;
  check_status(nfs.readdir(dir, true, 4096, &names, nullptr, &complete), NFS3_OK, "READDIRPLUS");
  check(std::set<std::string>(names.begin(), names.end()) == expected && complete,
        "READDIRPLUS lists the names with attributes and handles");
  const char bad_verf[8] = {9, 9, 9, 9, 9, 9, 9, 9};
  check_status(nfs.readdir_with_verf(dir, 1, bad_verf), NFS3ERR_BAD_COOKIE, "READDIR with a wrong cookie verifier");
  check_status(nfs.readdir(f1, false, 4096, &names), NFS3ERR_NOTDIR, "READDIR of a file");

  // REMOVE and RMDIR; handles of removed files are stale.
  check_status(nfs.remove(dir, "f3"), NFS3_OK, "REMOVE of one link");
  check_status(nfs.getattr(f1, &a1), NFS3_OK, "the other link still works");
  check_status(nfs.remove(dir, "e1"), NFS3_OK, "REMOVE");
  check_status(nfs.getattr(e1, nullptr), NFS3ERR_STALE, "GETATTR of a removed file is NFS3ERR_STALE");
  check_status(nfs.write(e1, 0, "x", FILE_SYNC), NFS3ERR_STALE, "WRITE to a removed file is NFS3ERR_STALE");
  check_status(nfs.remove(dir, "missing"), NFS3ERR_NOENT, "REMOVE of a missing name");
  Fh sub;
  check_status(nfs.mkdir(dir, "sub", &sub), NFS3_OK, "MKDIR of a sub-directory");
  check_status(nfs.create(sub, "inner", UNCHECKED, 0644, nullptr), NFS3_OK, "CREATE in the sub-directory");
  check_status(nfs.rmdir(dir, "sub"), NFS3ERR_NOTEMPTY, "RMDIR of a non-empty directory");
  check_status(nfs.rename(dir, "sub", sub, "loop"), NFS3ERR_INVAL, "RENAME of a directory into itself");
  check_status(nfs.remove(sub, "inner"), NFS3_OK, "REMOVE in the sub-directory");
  check_status(nfs.rmdir(dir, "sub"), NFS3_OK, "RMDIR");
  check_status(nfs.getattr(sub, nullptr), NFS3ERR_STALE, "GETATTR of a removed directory is NFS3ERR_STALE");

  // Forged handles.
  Fh forged = f1;
  forged[forged.size() - 1] ^= 0x5a;
  check_status(nfs.getattr(forged, nullptr), NFS3ERR_BADHANDLE, "GETATTR of a forged handle");
  check_status(nfs.getattr(Fh("abc"), nullptr), NFS3ERR_BADHANDLE, "GETATTR of a 3-byte handle");
  check_status(nfs.getattr(Fh(), nullptr), NFS3ERR_BADHANDLE, "GETATTR of an empty handle");

  // UMNT and UMNTALL.
  std::string p = export_path;
  ok = rpc.call<char>([&](rpc_cb cb, void* d) { return rpc_mount3_umnt_async(rpc.ctx(), cb, p.data(), d); }, [](char&) {});
  check(ok, "MOUNT UMNT");
  ok = rpc.call<char>([&](rpc_cb cb, void* d) { return rpc_mount3_umntall_async(rpc.ctx(), cb, d); }, [](char&) {});
  check(ok, "MOUNT UMNTALL");
  std::printf("procedures: all checks passed\n");
  return 0;
}

// Creates n files with CREATE calls kept in flight 64 at a time, then lists
// them with READDIR and READDIRPLUS in small pages.
int bigdir(int port, const std::string& export_path, int n) {
  Rpc rpc(port);
  Nfs nfs(rpc);
  Fh root, dir;
  check_status(nfs.mnt(export_path, &root), MNT3_OK, "MNT");
  const std::string name = "bigdir-" + std::to_string(getpid());
  check_status(nfs.mkdir(root, name, &dir), NFS3_OK, "MKDIR " + name);
  std::vector<std::string> files(n);
  std::vector<CREATE3args> args(n);
  for (int i = 0; i < n; ++i) {
    files[i] = "file-" + std::to_string(i);
    args[i].where.dir = fh3(dir);
    args[i].where.name = files[i].data();
    args[i].how.mode = UNCHECKED;
  }
  int failed = 0;
  rpc.pipeline(
      n, 64, [&](std::size_t i, rpc_cb cb, void* p) { return rpc_nfs3_create_async(rpc.ctx(), cb, &args[i], p); },
      [&](std::size_t, int status, void* data) {
        if (status != RPC_STATUS_SUCCESS || static_cast<CREATE3res*>(data)->status != NFS3_OK) ++failed;
      });
  check(failed == 0, "created " + std::to_string(n) + " files with CREATE (64 in flight)");
  const std::set<std::string> expected(files.begin(), files.end());
  for (bool plus : {false, true}) {
    std::vector<std::string> names;
    int pages = 0;
    bool complete = true;
    check_status(nfs.readdir(dir, plus, 8192, &names, &pages, plus ? &complete : nullptr), NFS3_OK,
                 plus ? "READDIRPLUS to the end" : "READDIR to the end");
    check(names.size() == expected.size() && std::set<std::string>(names.begin(), names.end()) == expected && complete,
          std::string(plus ? "READDIRPLUS" : "READDIR") + " listed each of the " + std::to_string(n) +
              " names once, in " + std::to_string(pages) + " pages");
  }
  std::printf("bigdir: all checks passed\n");
  return 0;
}

// As `uid`, who may not write (unmapped, or read-only on the export).
int denied(int port, const std::string& export_path, std::uint32_t uid, const std::string& expect) {
  Fh root;
  {
    Rpc admin(port);
    Nfs nfs(admin);
    check_status(nfs.mnt(export_path, &root), MNT3_OK, "MNT as the administrator");
  }
  Rpc rpc(port, uid, uid);
  Nfs nfs(rpc);
  if (expect == "unmapped") {
    check_status(nfs.mnt(export_path, nullptr), MNT3ERR_ACCES, "MNT as unmapped uid " + std::to_string(uid));
    check_status(nfs.getattr(root, nullptr), NFS3ERR_ACCES, "GETATTR as an unmapped uid");
    check_status(nfs.create(root, "denied", UNCHECKED, 0644, nullptr), NFS3ERR_ACCES, "CREATE as an unmapped uid");
  } else {
    Fh mounted;
    check_status(nfs.mnt(export_path, &mounted), MNT3_OK, "MNT as read-only uid " + std::to_string(uid));
    check_status(nfs.getattr(mounted, nullptr), NFS3_OK, "GETATTR on a read-only export");
    check_status(nfs.create(mounted, "denied", UNCHECKED, 0644, nullptr), NFS3ERR_ROFS,
                 "CREATE on a read-only export is NFS3ERR_ROFS");
    check_status(nfs.mkdir(mounted, "denied-dir", nullptr), NFS3ERR_ROFS, "MKDIR on a read-only export");
    std::vector<std::string> names;
    check_status(nfs.readdir(mounted, false, 4096, &names), NFS3_OK, "READDIR on a read-only export");
    for (const auto& n : names) {
      Fh f;
      Attr a;
      if (nfs.lookup(mounted, n, &f, &a) == NFS3_OK && a.type == NF3REG) {
        check_status(nfs.write(f, 0, "x", FILE_SYNC), NFS3ERR_ROFS, "WRITE to " + n + " on a read-only export");
        check_status(nfs.remove(mounted, n), NFS3ERR_ROFS, "REMOVE on a read-only export");
        break;
      }
    }
  }
  std::printf("denied: all checks passed\n");
  return 0;
}

std::string hex(const std::string& b) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : b) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

std::string unhex(const std::string& h) {
  std::string out;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2) out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  return out;
}

// Writes a local file to EXPORT/NAME with UNSTABLE 1 MiB WRITEs, 16 in
// flight, then COMMITs it (the version is sealed when COMMIT returns).
int put(int port, const std::string& export_path, const std::string& name, const std::string& local) {
  Rpc rpc(port);
  Nfs nfs(rpc);
  Fh root, f;
  check_status(nfs.mnt(export_path, &root), MNT3_OK, "MNT");
  check_status(nfs.create(root, name, UNCHECKED, 0644, nullptr, &f), NFS3_OK, "CREATE " + name);
  FILE* in = std::fopen(local.c_str(), "rb");
  if (!in) fail("open " + local);
  constexpr std::size_t kChunk = 1 << 20;
  std::vector<std::string> chunks;
  std::vector<WRITE3args> args;
  std::string buf(kChunk, '\0');
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, kChunk, in)) > 0) chunks.emplace_back(buf.data(), n);
  std::fclose(in);
  args.resize(chunks.size());
  for (std::size_t i = 0; i < chunks.size(); ++i) {
    args[i].file = fh3(f);
    args[i].offset = i * kChunk;
    args[i].count = static_cast<count3>(chunks[i].size());
    args[i].stable = UNSTABLE;
    args[i].data.data_len = static_cast<u_int>(chunks[i].size());
    args[i].data.data_val = chunks[i].data();
  }
  std::size_t failed = 0;
  rpc.pipeline(
      chunks.size(), 16, [&](std::size_t i, rpc_cb cb, void* p) { return rpc_nfs3_write_async(rpc.ctx(), cb, &args[i], p); },
      [&](std::size_t, int status, void* data) {
        if (status != RPC_STATUS_SUCCESS || static_cast<WRITE3res*>(data)->status != NFS3_OK) ++failed;
      });
  check(failed == 0, "wrote " + std::to_string(chunks.size()) + " UNSTABLE WRITEs");
  std::string verf;
  check_status(nfs.commit(f, &verf), NFS3_OK, "COMMIT");
  return 0;
}

// Prints the handle of EXPORT/NAME and the server's write verifier.
int probe(int port, const std::string& export_path, const std::string& name) {
  Rpc rpc(port);
  Nfs nfs(rpc);
  Fh root, f;
  check_status(nfs.mnt(export_path, &root), MNT3_OK, "MNT");
  check_status(nfs.lookup(root, name, &f), NFS3_OK, "LOOKUP " + name);
  std::string verf;
  check_status(nfs.commit(f, &verf), NFS3_OK, "COMMIT");
  std::printf("handle=%s verifier=%s\n", hex(f).c_str(), hex(verf).c_str());
  return 0;
}

// GETATTR of a handle given in hex; prints and returns its nfsstat3.
int getattr_hex(int port, const std::string& handle) {
  Rpc rpc(port);
  Nfs nfs(rpc);
  int st = nfs.getattr(unhex(handle), nullptr);
  std::printf("status=%d\n", st);
  return st == NFS3_OK ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc < 4) {
    std::fprintf(stderr, "usage: nfs_client procedures|bigdir|denied PORT EXPORT [N|UID unmapped|readonly]\n");
    return 2;
  }
  const std::string cmd = argv[1];
  const int port = std::atoi(argv[2]);
  const std::string export_path = argv[3];
  if (cmd == "procedures") return procedures(port, export_path);
  if (cmd == "put" && argc == 6) return put(port, export_path, argv[4], argv[5]);
  if (cmd == "probe" && argc == 5) return probe(port, export_path, argv[4]);
  if (cmd == "getattr") return getattr_hex(port, argv[3]);
  if (cmd == "bigdir" && argc == 5) return bigdir(port, export_path, std::atoi(argv[4]));
  if (cmd == "denied" && argc == 6)
    return denied(port, export_path, static_cast<std::uint32_t>(std::atoi(argv[4])), argv[5]);
  std::fprintf(stderr, "unknown command\n");
  return 2;
}
