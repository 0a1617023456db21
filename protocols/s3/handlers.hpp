// The S3 operations, one function each, grouped by resource in
// bucket.cpp, object_read.cpp, object_write.cpp, list.cpp and multipart.cpp.
// A handler either sends its success response itself and returns nullopt,
// or returns the error for the front end to send.
#pragma once

#include "protocols/s3/request.hpp"
#include "protocols/s3/service.hpp"

#include <boost/asio/awaitable.hpp>

namespace weft::s3 {

using Handler = boost::asio::awaitable<Outcome> (*)(Service&, Request&);

boost::asio::awaitable<Outcome> list_buckets(Service& s, Request& r);
boost::asio::awaitable<Outcome> create_bucket(Service& s, Request& r);
boost::asio::awaitable<Outcome> delete_bucket(Service& s, Request& r);
boost::asio::awaitable<Outcome> head_bucket(Service& s, Request& r);
boost::asio::awaitable<Outcome> get_bucket_location(Service& s, Request& r);
boost::asio::awaitable<Outcome> get_bucket_versioning(Service& s, Request& r);

boost::asio::awaitable<Outcome> get_object(Service& s, Request& r);
boost::asio::awaitable<Outcome> head_object(Service& s, Request& r);
boost::asio::awaitable<Outcome> get_object_tagging(Service& s, Request& r);
boost::asio::awaitable<Outcome> get_object_attributes(Service& s, Request& r);

boost::asio::awaitable<Outcome> put_object(Service& s, Request& r);
boost::asio::awaitable<Outcome> copy_object(Service& s, Request& r);
boost::asio::awaitable<Outcome> delete_object(Service& s, Request& r);
boost::asio::awaitable<Outcome> delete_objects(Service& s, Request& r);
boost::asio::awaitable<Outcome> put_object_tagging(Service& s, Request& r);
boost::asio::awaitable<Outcome> delete_object_tagging(Service& s, Request& r);

boost::asio::awaitable<Outcome> list_objects(Service& s, Request& r);
boost::asio::awaitable<Outcome> list_objects_v2(Service& s, Request& r);
boost::asio::awaitable<Outcome> list_object_versions(Service& s, Request& r);

boost::asio::awaitable<Outcome> create_multipart_upload(Service& s, Request& r);
boost::asio::awaitable<Outcome> upload_part(Service& s, Request& r);
boost::asio::awaitable<Outcome> upload_part_copy(Service& s, Request& r);
boost::asio::awaitable<Outcome> complete_multipart_upload(Service& s, Request& r);
boost::asio::awaitable<Outcome> abort_multipart_upload(Service& s, Request& r);
boost::asio::awaitable<Outcome> list_parts(Service& s, Request& r);
boost::asio::awaitable<Outcome> list_multipart_uploads(Service& s, Request& r);

}  // namespace weft::s3
