// Every REST handler, grouped by the file that holds it; routes.cpp maps
// methods and paths to them.
#pragma once

#include "protocols/rest/api.hpp"

namespace weft::rest {

using Reply = boost::asio::awaitable<Outcome>;

// system.cpp: probes, metrics, the OpenAPI document, server info.
Reply healthz(Service& s, Call& c);
Reply readyz(Service& s, Call& c);
Reply prometheus(Service& s, Call& c);
Reply openapi(Service& s, Call& c);
Reply server_info(Service& s, Call& c);
Reply metrics_history(Service& s, Call& c);

// files.cpp: content, metadata, directories, versions.
Reply file_read(Service& s, Call& c);  // GET and HEAD
Reply file_write(Service& s, Call& c);
Reply file_delete(Service& s, Call& c);
Reply file_stat(Service& s, Call& c);
Reply dir_list(Service& s, Call& c);
Reply dir_create(Service& s, Call& c);
Reply file_rename(Service& s, Call& c);
Reply file_versions(Service& s, Call& c);
Reply file_chunks(Service& s, Call& c);

// users.cpp: users and their credentials, API tokens.
Reply users_list(Service& s, Call& c);
Reply user_create(Service& s, Call& c);
Reply user_get(Service& s, Call& c);
Reply user_delete(Service& s, Call& c);
Reply user_password(Service& s, Call& c);
Reply user_ids(Service& s, Call& c);
Reply s3_key_create(Service& s, Call& c);
Reply s3_key_delete(Service& s, Call& c);
Reply ssh_key_add(Service& s, Call& c);
Reply ssh_key_delete(Service& s, Call& c);
Reply tokens_list(Service& s, Call& c);
Reply token_create(Service& s, Call& c);
Reply token_revoke(Service& s, Call& c);

// exports.cpp: exports and the audit log.
Reply exports_list(Service& s, Call& c);
Reply export_set(Service& s, Call& c);
Reply export_delete(Service& s, Call& c);
Reply audit_query(Service& s, Call& c);

// hints.cpp: a job's declared reading order, for a spoke's prefetcher.
Reply hint_register(Service& s, Call& c);

// spokes.cpp: spoke mounts at run time.
Reply spokes_list(Service& s, Call& c);
Reply spoke_add(Service& s, Call& c);
Reply spoke_remove(Service& s, Call& c);

// governance.cpp: a hub's residency rules and the spokes it served.
Reply residency_list(Service& s, Call& c);
Reply residency_add(Service& s, Call& c);
Reply residency_remove(Service& s, Call& c);
Reply hub_spokes_list(Service& s, Call& c);

// cache.cpp: the spoke chunk cache's figures, pins and evict.
Reply cache_stats(Service& s, Call& c);
Reply cache_pins_list(Service& s, Call& c);
Reply cache_pin(Service& s, Call& c);
Reply cache_unpin(Service& s, Call& c);
Reply cache_evict(Service& s, Call& c);
Reply cache_held(Service& s, Call& c);
Reply cache_trace_start(Service& s, Call& c);
Reply cache_trace_stop(Service& s, Call& c);

// jobs.cpp
Reply jobs_list(Service& s, Call& c);
Reply job_start(Service& s, Call& c);
Reply job_get(Service& s, Call& c);
Reply job_cancel(Service& s, Call& c);

}  // namespace weft::rest
