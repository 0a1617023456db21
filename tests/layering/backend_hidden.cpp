// Must not compile: the backend is two layers below a protocol.
#include "backend/kv/kv.hpp"

int layering_backend_hidden() { return 0; }
