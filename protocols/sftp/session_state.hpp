// Internals of Session shared by session.cpp (stream, queues, paths) and
// session_ops.cpp (one function per request type). Not part of the
// module's interface.
#pragma once

#include "gateway/ns/namespace.hpp"
#include "protocols/sftp/session.hpp"
#include "protocols/sftp/wire.hpp"

#include <chrono>
#include <optional>

namespace weft::sftp {

// A request with the packet its strings point into; never moved once
// parsed (it travels by unique_ptr).
struct Session::Pending {
  std::string packet;
  Request request;
  std::chrono::steady_clock::time_point started;
};

// An open file or directory handle.
struct Session::OpenFile {
  std::string id;
  bool directory = false;
  ns::OpContext ctx;
  std::string path;  // "export/a/b", for audit
  ns::Ino ino = 0;
  // Files.
  ns::Handle handle;
  bool writable = false;
  // A staged file (ns::Namespace::stage) replaces its name when committed at
  // CLOSE; until then it has no inode, so FSTAT answers from what was
  // written and FSETSTAT is applied after the commit.
  bool staged = false;
  std::uint32_t stage_mode = 0;
  std::uint64_t staged_size = 0;
  ns::SetAttr deferred;
  bool has_deferred = false;
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
  // Directories: the virtual root lists exports once.
  bool virtual_root = false;
  std::uint64_t cookie = 0;
  bool eof = false;
  // Requests naming this handle, served one after another.
  std::deque<std::unique_ptr<Pending>> queue;
  bool busy = false;
  bool release_when_idle = false;  // the channel ended without a CLOSE
};

// Where a path leads. `root`: the virtual "/"; `in_root`: a missing name
// in it. Otherwise inside export
// ctx.export_access: parent 0 is the export root itself; `attr` is set when
// the name exists.
struct Session::Place {
  bool root = false;
  // A name directly under "/" that is no export: nothing can be made there.
  bool in_root = false;
  ns::OpContext ctx;
  ns::Ino parent = 0;
  std::string name;
  std::optional<ns::Attr> attr;
  Components path;
};

// What an operation produced: the reply, and what metrics and audit say.
struct Session::Served {
  std::string reply;
  bool error = false;
  std::string result = "ok";  // the status name for audit
  std::string path;           // audit path; empty: no audit record
  std::uint64_t bytes_in = 0;
  std::uint64_t bytes_out = 0;
};

// Reply builders: a packet starts with a length patched by finish_packet().
std::string start_packet(Type t, std::uint32_t id);
void finish_packet(std::string& packet);
std::string status_packet(std::uint32_t id, Status s, std::string_view message);
std::string_view status_name(Status s);
Attrs attrs_of(const ns::Attr& a);

}  // namespace weft::sftp
