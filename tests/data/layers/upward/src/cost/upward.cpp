// Fixture for the core_floor_order_refuses_* tests: cost (floor 4) must not include search (floor 6).
#include "memx/search/search.h"
