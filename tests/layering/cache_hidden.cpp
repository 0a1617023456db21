// Must not compile: the cache is below the namespace.
#include "cache/lru_map.hpp"

int layering_cache_hidden() { return 0; }
