// Control: what a protocol may include.
#include "gateway/metrics/metrics.hpp"
#include "gateway/ns/namespace.hpp"

int layering_ns_visible() { return sizeof(weft::ns::Attr) > 0; }
