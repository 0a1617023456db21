// The SMB2/3 front end ([MS-SMB2] over direct TCP), natively on Asio: one
// coroutine per connection on its own strand, serving the namespace's
// exports as shares (the default export "data" is the share "data") and
// IPC$ for clients that probe it. Users log in with NTLMv2 (SPNEGO or raw
// NTLMSSP) against the namespace's user table; signing is required by
// default; SMB 3.x encryption (AES-128-CCM/GCM, and on 3.1.1 AES-256) is used when a client asks
// for it and can be required for every session.
//
// Every request is a metrics sample per command (weft_smb_requests_total,
// errors, latency) plus bytes read and written; every access to stored data
// is an audit record (session setup, tree connect, create, close with the
// bytes moved through the open, set_info, and every failure).
#pragma once

#include "protocols/registry.hpp"

namespace weft::smb {

struct Config;

protocols::FrontEndResult listen(const protocols::Services& services,
                                 const boost::asio::ip::tcp::endpoint& endpoint, const Config& config);

// The registry's factory for "smb", with the default configuration.
protocols::FrontEndResult make_front_end(const protocols::Services& services,
                                         const boost::asio::ip::tcp::endpoint& endpoint);

}  // namespace weft::smb
