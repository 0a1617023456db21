// The NFS front end: NFSv3 (RFC 1813), its MOUNT v3 protocol and a
// portmapper v2, all on one TCP port, over ONC RPC with record marking on
// Asio. Each connection reads records on its strand and runs each call as
// its own coroutine (at most Options::max_in_flight at once; replies go out
// in the order they complete). Calls are authenticated by AUTH_SYS (the uid
// maps to a user of the namespace's user table; an unknown uid, AUTH_NONE
// and, with root_squash, uid 0 act as the anonymous user) and served through
// the namespace API. File handles (handles.hpp) are stable across restarts;
// their MAC key lives in DATA_DIR/nfs-handle.key.
//
// Every call is a metrics sample (weft_nfs_*, per procedure) and, past the
// NULL procedures, an audit record.
#pragma once

#include "protocols/nfs/service.hpp"
#include "protocols/registry.hpp"

namespace weft::nfs {

protocols::FrontEndResult listen(const protocols::Services& services,
                                 const boost::asio::ip::tcp::endpoint& endpoint, const Options& options);

// The registry's factory for "nfs", with the default options.
protocols::FrontEndResult make_front_end(const protocols::Services& services,
                                         const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace weft::nfs
