// The SFTP front end's one table from ns::Errc to SFTP v3 status codes
// (v3 has nine; the closest one is chosen as OpenSSH's sftp-server does for
// errno), with the namespace's message as the status text.
#pragma once

#include "protocols/sftp/packet.hpp"

#include <system_error>

namespace weft::sftp {

Status status_of(const std::error_code& ec);

}  // namespace weft::sftp
